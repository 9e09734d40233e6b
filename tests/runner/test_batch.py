"""`campaign run --batch`: the real OpenAI and Anthropic SDKs against the fake server's batch APIs,
on SQLite and PostgreSQL — completion on both wires, a kill -9 while a batch is pending and the
resume that collects it without submitting again, a lost create answer, expiry → failed jobs → a
normal run finishes them, cost at the batch discount, and nothing ever submitted twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.fake.server import FakeServer
from judgepanel.store.engine import make_engine
from judgepanel.store.models import (
    Campaign,
    Job,
    ProviderBatch,
    ProviderBatchJob,
    Request,
    RequestClaim,
    Response,
    Verdict,
)
from tests.helpers import cli
from tests.runner.conftest import DATASET, FAKE_KEYS, PAIRS, create_argv, tiny_db
from tests.runner.test_pay_once import BLIND

DISCOUNT = 0.5
PRICE = f"price_in=2&price_out=8&batch_discount={DISCOUNT}"  # USD per million tokens, so the batch cost is checkable


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(batch_seconds=0.3, seed=5) as fake:
        yield fake


@pytest.fixture
def db(db_url: str) -> Iterator[tuple[str, Engine]]:
    eng = tiny_db(db_url)
    yield db_url, eng
    eng.dispose()


def judge(wire: str, url: str, name: str = "judge", extra: str = "") -> str:
    base = f"{url}/v1" if wire == "openai" else url
    return f"{wire}:{name}{extra}?base_url={base}&{PRICE}"


def create(url: str, name: str, *judges: str, limit: int = 5) -> None:
    args = [a for j in judges for a in ("--judge", j)]
    out = cli(
        "campaign", "create", name, "--dataset", DATASET, "--pairs", PAIRS, "--protocol", "pairwise",
        *args, "--limit", str(limit), db=url,
    )  # fmt: skip
    assert out.code == 0, out.stderr


def run_batch(url: str, name: str, *extra: str, code: int = 0) -> dict[str, Any]:
    out = cli("campaign", "run", name, "--batch", "--poll-interval", "0.1", "--json", *extra, db=url)
    return dict(out.json(code=code))


def batch_stats(fake: FakeServer) -> dict[str, Any]:
    return dict(fake.stats()["batches"])


def submitted_jobs(fake: FakeServer) -> Counter[str]:
    """How often each job id went to the provider in a batch (custom ids end in `-<job id>`)."""
    return Counter(cid.rsplit("-", 1)[1] for cid in batch_stats(fake)["custom_ids"])


def realtime_calls(fake: FakeServer) -> int:
    by_path = fake.stats()["by_path"]
    return int(by_path.get("/v1/chat/completions", 0) + by_path.get("/v1/messages", 0))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_batch_run_completes_stores_like_realtime_and_prices_at_the_batch_rate(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str], wire: str
) -> None:
    url, eng = db
    create(url, "b", judge(wire, server.url))
    out = run_batch(url, "b")
    jobs = out["jobs"]
    assert out["status"] == "done" and out["done"] == jobs == out["submitted"] == out["collected"] == 10
    assert out["in_batches"] == 0 and out["pending"] == 0
    stats = batch_stats(server)
    assert stats["created"] == {wire: 1} and stats["entries"] == jobs
    assert realtime_calls(server) == 0  # everything went through the batch API
    with eng.connect() as conn:
        rows = conn.execute(
            select(
                Request.messages, Request.request_hash, Response.raw_body, Response.input_tokens,
                Response.output_tokens, Response.cost_usd, Response.ok, Verdict.parse_status,
            )
            .join(Response, Response.request_id == Request.id)
            .join(Verdict, Verdict.request_id == Request.id)
        ).all()  # fmt: skip
        batch = conn.execute(select(ProviderBatch)).one()
        states = Counter(conn.scalars(select(ProviderBatchJob.state)))
    assert len(rows) == jobs
    total = 0.0
    for messages, rhash, raw, tin, tout, cost, ok, parsed in rows:
        assert ok and parsed == "ok" and messages and len(rhash) == 64
        assert json.loads(raw)["usage"]  # the provider's own reply body, kept raw
        list_price = (tin * 2 + tout * 8) / 1e6
        assert cost == pytest.approx(list_price * (1 - DISCOUNT))
        total += cost
    assert out["cost_usd"] == pytest.approx(total, abs=1e-6)
    assert batch.batch_id and batch.finished_at is not None and batch.status in ("completed", "ended")
    assert states == {"done": jobs}
    # a second batch run has nothing to submit; a realtime run buys nothing either
    again = run_batch(url, "b")
    assert again["submitted"] == 0 and batch_stats(server)["created"] == {wire: 1}
    plain = cli("campaign", "run", "b", "--json", db=url).json()
    assert plain["calls"] == 0 and realtime_calls(server) == 0


def test_batch_answers_match_the_same_requests_made_realtime(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str]
) -> None:
    """The batch line carries the body a realtime call sends: same request hash, same verdicts."""
    url, eng = db
    create(url, "bt", judge("openai", server.url), limit=3)
    create(url, "rt", judge("openai", server.url), limit=3)
    run_batch(url, "bt")
    assert cli("campaign", "run", "rt", "--no-cache", "--json", db=url).json()["done"] == 6
    with eng.connect() as conn:
        got = conn.execute(
            select(Job.campaign_id, Job.job_key, Request.request_hash, Verdict.value_canonical)
            .join(Request, Request.job_id == Job.id)
            .join(Verdict, Verdict.request_id == Request.id)
        ).all()
    by_campaign: dict[int, dict[str, tuple[str, str | None]]] = {}
    for cid, key, rhash, value in got:
        by_campaign.setdefault(cid, {})[key] = (rhash, value)
    first, second = by_campaign.values()
    assert first == second and len(first) == 6
    # status: the same calls cost the same list price; the batch run paid half of it
    bt = cli("campaign", "status", "bt", "--json", db=url).json()
    rt = cli("campaign", "status", "rt", "--json", db=url).json()
    assert bt["batch_calls"] == 6 and rt["batch_calls"] == 0 and rt["saved_by_batch_usd"] == 0
    assert bt["cost_list_usd"] == pytest.approx(rt["cost_list_usd"]) and rt["cost_list_usd"] > 0
    assert rt["cost_usd"] == pytest.approx(rt["cost_list_usd"]) and rt["saved_by_cache_usd"] == 0
    assert bt["saved_by_batch_usd"] == pytest.approx(bt["cost_list_usd"] * DISCOUNT)
    assert bt["cost_usd"] == pytest.approx(
        bt["cost_list_usd"] - bt["saved_by_batch_usd"] - bt["saved_by_cache_usd"]
    )
    assert bt["by_judge"][next(iter(bt["by_judge"]))]["batch_calls"] == 6
    text = cli("campaign", "status", "bt", db=url).stdout
    assert "batch APIs: 6 calls answered" in text


def test_plain_run_does_not_rebuy_jobs_in_an_open_batch_and_no_wait_resumes(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str]
) -> None:
    url, _eng = db
    server.batch_seconds = 3600
    create(url, "o", judge("anthropic", server.url))
    out = run_batch(url, "o", "--no-wait", code=3)
    assert out["status"] == "waiting" and out["in_batches"] == out["jobs"] == 10
    status = cli("campaign", "status", "o", "--json", db=url).json()
    assert status["in_batches"] == 10 and status["pending"] == 10 and status["done"] == 0
    plain = cli("campaign", "run", "o", "--json", db=url)
    summary = plain.json(code=3)
    assert summary["calls"] == 0 and realtime_calls(server) == 0
    assert "open provider batches" in plain.stderr
    worker = subprocess.run(
        [sys.executable, "-m", "judgepanel", "--db", url, "worker", "--campaign", "o", "--json"],
        env={**os.environ, **FAKE_KEYS}, capture_output=True, timeout=120,
    )  # fmt: skip
    assert worker.returncode == 3, worker.stderr.decode()  # it exits: the batch's jobs are not its own
    assert realtime_calls(server) == 0
    server.batch_seconds = 0
    done = run_batch(url, "o")
    assert done["status"] == "done" and done["submitted"] == 0 and done["collected"] == 10
    assert batch_stats(server)["created"] == {"anthropic": 1}
    assert max(submitted_jobs(server).values()) == 1


def test_a_batch_the_provider_no_longer_knows_gives_its_jobs_back(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str]
) -> None:
    url, eng = db
    server.batch_seconds = 3600
    create(url, "g", judge("openai", server.url), limit=3)
    assert run_batch(url, "g", "--no-wait", code=3)["in_batches"] == 6
    server.batch_api.reset()  # the provider forgets every batch (as after a data loss)
    server.batch_seconds = 0
    out = cli("campaign", "run", "g", "--batch", "--poll-interval", "0.1", "--json", db=url)
    summary = out.json(code=3)
    assert "does not know it (404)" in out.stderr
    assert summary["pending"] == 6 and summary["in_batches"] == 0 and summary["submitted"] == 0
    with eng.connect() as conn:
        assert set(conn.scalars(select(ProviderBatch.status))) == {"not_found"}
    again = run_batch(url, "g")  # submitted anew, in a new batch
    assert again["status"] == "done" and again["submitted"] == 6


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_lost_create_answer_is_found_at_the_provider_not_submitted_again(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str], wire: str
) -> None:
    url, eng = db
    server.batch_lost_creates = 1  # the batch is created, the answer never arrives
    create(url, "l", judge(wire, server.url))
    out = run_batch(url, "l")
    assert out["status"] == "done" and out["done"] == 10
    assert batch_stats(server)["created"] == {wire: 1}
    assert batch_stats(server)["duplicate_custom_ids"] == 0
    with eng.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(ProviderBatch)) == 1


def test_expired_batch_fails_jobs_transient_and_a_normal_run_finishes_them(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str]
) -> None:
    url, eng = db
    server.batch_expire = True  # half the entries answered, the rest expired
    create(url, "e", judge("openai", server.url), judge("anthropic", server.url, "judge-a"))
    out = run_batch(url, "e", code=3)
    assert out["status"] == "incomplete" and out["jobs"] == 20
    assert out["done"] == 10 and out["failed"] == 10 and out["errors"] == {"transient": 10}
    with eng.connect() as conn:
        failed = conn.execute(
            select(Response.ok, Response.error_class, Response.error_message)
            .join(Request, Request.id == Response.request_id)
            .join(Job, Job.id == Request.job_id)
            .where(Job.status == "failed")
        ).all()
        assert {r.error_class for r in failed} == {"transient"} and not any(r.ok for r in failed)
        assert all("expired" in (r.error_message or "") for r in failed)
        assert Counter(conn.scalars(select(Job.error_class).where(Job.status == "failed"))) == {
            "transient": 10
        }
    server.batch_expire = False
    calls_before = realtime_calls(server)
    fin = cli("campaign", "run", "e", "--retry-failed", "--json", db=url).json()
    assert fin["done"] == 20 and fin["calls"] == 10
    assert realtime_calls(server) - calls_before == 10  # only the expired ones were bought again
    with eng.connect() as conn:
        attempts = dict(
            conn.execute(select(Job.id, func.count(Request.id)).join(Request).group_by(Job.id)).all()
        )
    assert sorted(Counter(attempts.values()).items()) == [(1, 10), (2, 10)]


def test_per_entry_errors_become_failed_jobs(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str]
) -> None:
    url, _eng = db
    create(url, "x", judge("anthropic", server.url, extra="!500@0.5"))
    out = run_batch(url, "x", code=3)
    assert 0 < out["failed"] < out["jobs"] and out["errors"] == {"transient": out["failed"]}
    assert out["done"] + out["failed"] == out["jobs"]


def test_batch_refuses_a_judge_without_a_batch_api_and_leaves_the_db_untouched(
    db: tuple[str, Engine], keys_env: dict[str, str]
) -> None:
    url, eng = db
    create(url, "s", "sim:panel")
    out = cli("campaign", "run", "s", "--batch", db=url)
    assert out.code == 2 and "no batch API" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    with eng.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(ProviderBatch)) == 0
        assert set(conn.scalars(select(Job.status))) == {"pending"}


# ---------------------------------------------------------------- kill -9 while a batch is pending


def start_cli(url: str, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, **FAKE_KEYS}
    return subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", url, "campaign", "run", name, "--batch",
         "--poll-interval", "0.2", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_kill_9_while_a_batch_is_pending_then_resume_collects_without_resubmitting(
    db: tuple[str, Engine], server: FakeServer, wire: str
) -> None:
    url, eng = db
    server.batch_seconds = 3600
    create(url, "k", judge(wire, server.url), limit=6)
    proc = start_cli(url, "k")
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            with eng.connect() as conn:
                if conn.scalar(select(func.count()).where(ProviderBatch.batch_id.is_not(None))):
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        time.sleep(0.5)  # polling now
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert batch_stats(server)["created"] == {wire: 1}
    with eng.connect() as conn:
        assert set(conn.scalars(select(Job.status))) == {"running"}
        assert conn.scalar(select(func.count()).select_from(Verdict)) == 0
    server.batch_seconds = 0
    resumed = start_cli(url, "k")
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr.decode()
    out = json.loads(stdout)
    assert out["status"] == "done" and out["submitted"] == 0 and out["collected"] == out["jobs"] == 12
    assert batch_stats(server)["created"] == {wire: 1}
    assert max(submitted_jobs(server).values()) == 1 and realtime_calls(server) == 0
    with eng.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Verdict)) == 12
        assert conn.scalar(select(func.count()).select_from(Request)) == 12


def test_a_batch_run_sends_the_campaigns_own_template(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str]
) -> None:
    """A campaign created with --template is sent with that template through the batch API too
    (batch runs used to render the bundled one)."""
    url, eng = db
    out = cli(
        "campaign", "create", "t", "--dataset", DATASET, "--pairs", PAIRS, "--protocol", "pairwise",
        "--judge", judge("openai", server.url), "--template", "pairwise=@classic-pairwise", "--limit", "2",
        db=url,
    )  # fmt: skip
    assert out.code == 0, out.stderr
    assert run_batch(url, "t")["done"] == 4
    with eng.connect() as c:
        sent = c.execute(select(Request.template_name, Request.messages)).all()
    assert {name for name, _ in sent} == {"@classic-pairwise"}
    assert all("[[A]] if Assistant A is better" in m[-1]["content"] for _, m in sent)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_batch_results_are_held_to_the_reply_cap_and_the_column_widths(
    db: tuple[str, Engine], server: FakeServer, keys_env: dict[str, str], wire: str
) -> None:
    """Issue 29 §1: result files are not read through the HTTP reply cap, so a batch answer over
    the judge's `max_reply_bytes` (here a 10,000-character `model`) was stored whole — and on
    PostgreSQL the writer refused the batch (the column holds 200). Now its body is replaced by
    its size and hash, `model` cut to its column, and the verdict read as usual."""
    url, eng = db
    create(url, "capped", judge(wire, server.url, "judge!longfields") + "&max_reply_bytes=1k", limit=2)
    summary = run_batch(url, "capped")
    assert summary["done"] == 4, summary
    with eng.connect() as conn:
        rows = conn.execute(select(Response.raw_body, Response.model_returned)).all()
    assert len(rows) == 4
    for body, model in rows:
        assert body.startswith("[not stored: ") and "over max_reply_bytes=1,024; sha256 " in body
        assert model is not None and len(model) == 200


def _identical_conditions(url: str, fake: FakeServer, tmp_path: Path) -> None:
    """A study of two conditions that render byte-identical prompts (the template shows no
    rubric): 6 units × 2 conditions = 12 jobs asking 6 distinct requests."""
    tiny_db(url, n_groups=2, per_group=3).dispose()
    assert cli("rubric", "add", "summeval", db=url).code == 0
    template = tmp_path / "blind.j2"
    template.write_text(BLIND, encoding="utf-8")
    made = cli(
        *create_argv(
            "blind",
            judge("openai", fake.url),
            extra=(
                "--rubric", "summeval", "--dimension", "coherence", "--template", f"pointwise={template}",
                "--condition", "none,rubric", "--allow-identical-conditions",
            ),
        ),
        db=url,
    )  # fmt: skip
    assert made.code == 0, made.stderr


def test_twins_in_one_batch_run_are_submitted_once(
    db_url: str, server: FakeServer, keys_env: dict[str, str], tmp_path: Path
) -> None:
    """Issue 28 §2 for `--batch`: twins are sent to the provider once and answered from the store."""
    _identical_conditions(db_url, server, tmp_path)
    out = run_batch(db_url, "blind")
    assert out["status"] == "done" and out["done"] == 12
    assert sum(submitted_jobs(server).values()) == 6  # was 12: each twin paid for again
    assert out["submitted"] == 6 and out["collected"] == 6 and out["cached"] == 6
    eng = make_engine(db_url)
    try:
        with eng.connect() as c:
            paid = c.scalar(select(func.count()).select_from(Response).where(Response.cached_from.is_(None)))
            asked = c.scalar(select(func.count(func.distinct(Request.request_hash))))
            verdicts = c.scalar(select(func.count()).select_from(Verdict))
        assert (paid, asked, verdicts) == (6, 6, 12)
    finally:
        eng.dispose()


def test_twins_of_a_request_in_an_open_batch_wait_for_it_across_runs(
    sqlite_url: str, server: FakeServer, keys_env: dict[str, str], tmp_path: Path
) -> None:
    """A `--no-wait` run leaves its twins pending; a later run does not submit them while the
    batch that asks their request is open, and answers them from it once it is collected."""
    _identical_conditions(sqlite_url, server, tmp_path)
    server.batch_seconds = 3600
    first = run_batch(sqlite_url, "blind", "--no-wait", code=3)
    assert first["status"] == "waiting" and first["submitted"] == 6 and first["in_batches"] == 6
    again = run_batch(sqlite_url, "blind", "--no-wait", code=3)
    assert again["submitted"] == 0 and again["status"] == "waiting"
    assert batch_stats(server)["created"] == {"openai": 1}
    server.batch_seconds = 0
    done = run_batch(sqlite_url, "blind")
    assert done["status"] == "done" and done["done"] == 12 and done["cached"] == 6
    assert sum(submitted_jobs(server).values()) == 6


def _two_campaigns(url: str, server: FakeServer) -> None:
    """Campaigns a and b: the same judge and items, so the same requests."""
    tiny_db(url).dispose()
    create(url, "a", judge("openai", server.url))
    create(url, "b", judge("openai", server.url))


def _batch_open_in_a_and_b_to_run(url: str, server: FakeServer) -> int:
    """`_two_campaigns`, a's batch submitted and left open: how many requests it asks."""
    _two_campaigns(url, server)
    server.batch_seconds = 3600
    first = run_batch(url, "a", "--no-wait", code=3)
    assert first["submitted"] == first["jobs"] > 0 and first["status"] == "waiting"
    return int(first["submitted"])


def test_a_realtime_run_leaves_pending_what_another_campaigns_open_batch_asks(
    db_url: str, server: FakeServer, keys_env: dict[str, str]
) -> None:
    """A realtime run asked a request that another campaign's open batch was already asking, and
    paid for it twice. Now its jobs are left pending with a warning naming that campaign, and are
    answered from the store once the batch is collected."""
    n = _batch_open_in_a_and_b_to_run(db_url, server)
    ran = cli("campaign", "run", "b", "--json", db=db_url)
    out = ran.json(code=3)
    assert realtime_calls(server) == 0  # was n: each request asked again beside the batch
    assert (out["status"], out["done"], out["pending"], out["calls"]) == ("incomplete", 0, n, 0)
    warned = [w for w in out["warnings"] if "open provider batches of campaign a" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{n} job(s)"), out["warnings"]
    assert "--no-cache" in warned[0] and "campaign a" in ran.stderr
    server.batch_seconds = 0
    assert run_batch(db_url, "a")["status"] == "done"
    again = cli("campaign", "run", "b", "--json", db=db_url).json()
    assert (again["status"], again["done"], again["cached"], again["calls"]) == ("done", n, n, 0)
    assert realtime_calls(server) == 0 and sum(submitted_jobs(server).values()) == n


def test_a_worker_leaves_what_an_open_batch_asks_and_exits(
    db_url: str, server: FakeServer, keys_env: dict[str, str]
) -> None:
    """The worker's passes lease, skip and hand back such jobs: without `--follow` it stops after one
    pass (it does not wait a batch's day out), where it leased and handed them back without end."""
    n = _batch_open_in_a_and_b_to_run(db_url, server)
    out = cli("worker", "--campaign", "b", "--json", "--poll-seconds", "0.1", db=db_url).json(code=3)
    assert (out["status"], out["passes"], out["calls"], out["pending"]) == ("incomplete", 1, 0, n)
    assert any("open provider batches of campaign a" in w for w in out["warnings"]), out["warnings"]
    assert realtime_calls(server) == 0


def test_a_following_worker_takes_up_jobs_again_once_the_batch_is_collected(
    sqlite_url: str, server: FakeServer, keys_env: dict[str, str]
) -> None:
    n = _batch_open_in_a_and_b_to_run(sqlite_url, server)
    worker = subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", sqlite_url, "worker", "--campaign", "b", "--json",
         "--follow", "--poll-seconds", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **FAKE_KEYS},
    )  # fmt: skip
    eng = make_engine(sqlite_url)
    try:
        deadline = time.monotonic() + 60
        while True:  # the first pass ends with the campaign `incomplete`
            with eng.connect() as c:
                status = c.scalar(select(Campaign.status).where(Campaign.name == "b"))
            if status == "incomplete":
                break
            assert time.monotonic() < deadline and worker.poll() is None, status
            time.sleep(0.05)
        time.sleep(1.0)  # ten polls: each would have been a pass leasing and handing back n jobs
        assert worker.poll() is None
        server.batch_seconds = 0
        assert run_batch(sqlite_url, "a")["status"] == "done"
        deadline = time.monotonic() + 60
        while True:
            with eng.connect() as c:
                done = c.scalar(
                    select(func.count(Job.id))
                    .join(Campaign, Campaign.id == Job.campaign_id)
                    .where(Job.status == "done", Campaign.name == "b")
                )
            if done == n:
                break
            assert time.monotonic() < deadline and worker.poll() is None, done
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGTERM)
        stdout, stderr = worker.communicate(timeout=60)
        eng.dispose()
    out = json.loads(stdout)
    assert worker.returncode == 130, stderr.decode()
    assert (out["passes"], out["calls"], out["cached"], out["done"]) == (2, 0, n, n), out
    assert realtime_calls(server) == 0


def test_a_batch_does_not_send_what_a_realtime_run_is_asking_right_now(
    db_url: str, server: FakeServer, keys_env: dict[str, str]
) -> None:
    """The other order: campaign a's realtime calls are in flight (slow server) when campaign b's
    batch run starts with the same requests. It sent them all, paying twice; now it records its
    batch, claims its requests, and takes back those a live run holds: nothing is sent, they go
    back to pending, and the next batch run answers them from the store."""
    _two_campaigns(db_url, server)
    # long enough that the batch run below (2.4 s when it is the process's first, 0.1 s after) ends
    # well before the realtime answers, however loaded the machine
    server.latency = 10.0
    eng = make_engine(db_url)
    realtime = subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", db_url, "campaign", "run", "a", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **FAKE_KEYS},
    )  # fmt: skip
    try:
        jobs = 0
        deadline = time.monotonic() + 60
        while True:  # every request of a claimed, i.e. asked and not answered yet
            with eng.connect() as c:
                jobs = c.scalar(select(func.count(Job.id)).join(Campaign).where(Campaign.name == "a"))
                claimed = c.scalar(select(func.count()).select_from(RequestClaim))
            if claimed == jobs:
                break
            assert time.monotonic() < deadline and realtime.poll() is None, claimed
            time.sleep(0.05)
        out = run_batch(db_url, "b", code=3)
        assert (out["submitted"], out["done"], out["pending"]) == (0, 0, jobs), out
        assert batch_stats(server)["created"] == {}  # was {"openai": 1}: every request paid again
        assert any("a realtime run was asking" in w for w in out["warnings"]), out["warnings"]
        _, stderr = realtime.communicate(timeout=120)
        assert realtime.returncode == 0, stderr.decode()
    finally:
        if realtime.poll() is None:
            realtime.kill()
            realtime.communicate()
        eng.dispose()
    server.latency = 0.0
    again = run_batch(db_url, "b")
    assert (again["status"], again["cached"], again["submitted"]) == ("done", jobs, 0)
    assert realtime_calls(server) == jobs and batch_stats(server)["created"] == {}


def test_open_batches_are_looked_up_but_for_the_one_being_sent(sqlite_url: str) -> None:
    """`_not_asked_elsewhere` asks for open batches other than its own (recorded, not yet sent):
    of two batch runs recording the same request at once, the later look sees the earlier batch."""
    from judgepanel.store import campaigns as store
    from judgepanel.store.campaigns import provider_batches as pb

    tiny_db(sqlite_url).dispose()
    create(sqlite_url, "a", "sim:panel")
    create(sqlite_url, "b", "sim:panel")
    eng = make_engine(sqlite_url)
    try:
        pks = {}
        for name in ("a", "b"):
            cid = store.campaign_id(eng, name)
            job = store.lease_jobs(eng, cid, f"run-{name}", 1)[0]
            with eng.connect() as c:
                judge_id = c.scalar(select(Job.judge_id).where(Job.id == job.id))
            pks[name], _, _ = pb.open_provider_batch(
                eng, cid, judge_id, "openai", f"run-{name}", [(job.id, 1, "h-same")], "n0"
            )
        assert pb.hashes_in_open_batches(eng, ["h-same", "h-other"]) == {"h-same": "a"}
        assert pb.hashes_in_open_batches(eng, ["h-same"], except_batch=pks["b"]) == {"h-same": "a"}
        assert pb.hashes_in_open_batches(eng, ["h-same"], except_batch=pks["a"]) == {"h-same": "b"}
        pb.close_batch(eng, pks["a"], "completed")
        assert pb.hashes_in_open_batches(eng, ["h-same"], except_batch=pks["b"]) == {}
        assert pb.open_batch_ids(eng) == frozenset({pks["b"]})
    finally:
        eng.dispose()
