"""Issue 17 §2: `max_cost` caps a campaign's TOTAL spend (every run, worker and resume), counted at
the fake provider server (what a provider would bill), on SQLite and PostgreSQL; and workers that
share a host name but not a PID namespace never take each other's live leases (every job called
exactly once, counted at the server). Real CLI, real HTTP, real databases."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from judgepanel.fake.server import FakeServerProcess
from judgepanel.runner import campaign as api
from judgepanel.store import liveness
from judgepanel.store.engine import make_engine
from tests.helpers import CliResult, cli
from tests.runner.conftest import DATASET, FAKE_KEYS, create_argv, tiny_db
from tests.runner.test_workers import _campaign, counts, settled_chat_requests, start_worker

PRICE_IN, PRICE_OUT = 20.0, 200.0  # USD per million tokens
PRICES = f"price_in={PRICE_IN:g}&price_out={PRICE_OUT:g}"


@pytest.fixture(scope="module")
def billing() -> Iterator[FakeServerProcess]:
    """Without prompt caching, so what the server billed is input × price_in + output × price_out."""
    with FakeServerProcess("--no-prompt-cache", "--latency", "0.02", "--seed", "11") as server:
        yield server


def billed_usd(fake: FakeServerProcess) -> float:
    b = fake.stats()["billed"]
    return (b.get("input_tokens", 0) * PRICE_IN + b.get("output_tokens", 0) * PRICE_OUT) / 1e6


def as_json(out: CliResult, *codes: int) -> dict[str, Any]:
    assert out.code in codes, (out.code, out.stderr)
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def per_call_usd(url: str, fake: FakeServerProcess) -> float:
    """What one call of this judge costs, measured: a small uncapped campaign."""
    before = billed_usd(fake)
    probe = f"openai:probe?base_url={fake.url}/v1&{PRICES}"
    assert cli(*create_argv("probe", probe, extra=("--limit", "6")), db=url).code == 0
    ran = as_json(cli("campaign", "run", "probe", "--json", db=url), 0)
    return (billed_usd(fake) - before) / ran["calls"]


def test_three_runs_never_spend_more_than_the_campaign_cap(
    db_url: str, billing: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """A cap of ~12 calls' cost, then `campaign run` three times: the campaign's total (billed at
    the server) stays under the one cap — before, every run got the whole cap again. Raising it
    with `--max-cost` records the new cap for later runs."""
    eng = tiny_db(db_url)
    cap = 12 * per_call_usd(db_url, billing)
    judge = f"openai:capped?base_url={billing.url}/v1&temperature=0.3&{PRICES}"
    argv = create_argv("capped", judge, extra=("--repeats", "5", "--max-cost", f"{cap:.8f}"))
    assert cli(*argv, db=db_url).code == 0
    start = billed_usd(billing)
    runs = []
    for _ in range(3):
        out = cli("campaign", "run", "capped", "--concurrency", "4", "--json", db=db_url)
        runs.append(as_json(out, 3))
        assert runs[-1]["status"] == "budget", runs[-1]
        assert "stopped by the campaign's cap" in out.stderr and "--max-cost USD" in out.stderr
        assert "run again with a larger --max-cost" not in out.stderr
    spent = billed_usd(billing) - start
    assert spent <= cap * (1 + 1e-9), (spent, cap, runs)
    assert spent >= 0.6 * cap, (spent, cap)  # the cap was spent, not stopped after a few calls
    status = as_json(cli("campaign", "status", "capped", "--json", db=db_url), 0)
    assert status["max_cost_usd"] == pytest.approx(cap)
    assert status["spent_usd"] == pytest.approx(spent, rel=1e-6)
    assert status["left_usd"] == pytest.approx(max(0.0, cap - spent), abs=1e-9)
    assert status["reserved_usd"] == 0.0  # every run gave back what it held
    assert runs[-1]["campaign_spent_usd"] == pytest.approx(spent, rel=1e-6)
    # --max-cost sets (raises) the cap, and it stays recorded for the next run
    raised = 2 * cap
    out = cli(
        "campaign", "run", "capped", "--max-cost", f"{raised:.8f}", "--concurrency", "4", "--json", db=db_url
    )
    as_json(out, 0, 3)
    again = as_json(cli("campaign", "run", "capped", "--concurrency", "4", "--json", db=db_url), 0, 3)
    assert again["max_cost_usd"] == pytest.approx(raised)
    total = billed_usd(billing) - start
    assert spent < total <= raised * (1 + 1e-9), (total, raised)
    status = as_json(cli("campaign", "status", "capped", "--json", db=db_url), 0)
    assert status["max_cost_usd"] == pytest.approx(raised)
    assert status["spent_usd"] == pytest.approx(total, rel=1e-6)
    eng.dispose()


@pytest.mark.postgres
def test_two_workers_share_the_campaign_cap(
    pg_url: str, billing: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """Two workers at once (each running several passes) on a capped campaign: together they stay
    under the cap, then stop with exit 3 instead of polling forever."""
    eng = tiny_db(pg_url)
    cap = 20 * per_call_usd(pg_url, billing)
    judge = f"openai:workers-capped?base_url={billing.url}/v1&temperature=0.7&{PRICES}"
    assert (
        cli(*create_argv("wcap", judge, extra=("--repeats", "8", "--max-cost", f"{cap:.8f}")), db=pg_url).code
        == 0
    )
    start = billed_usd(billing)
    procs = [
        start_worker(pg_url, "--campaign", "wcap", "--concurrency", "4", "--poll-seconds", "0.2")
        for _ in range(2)
    ]
    try:
        for p in procs:
            out, err = p.communicate(timeout=180)
            assert p.returncode == 3, err.decode()
            summary = json.loads(out)
            assert summary["status"] == "incomplete" and summary["pending"] > 0
            assert "stopped by the campaign's cap" in err.decode()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    spent = billed_usd(billing) - start
    assert 0.6 * cap <= spent <= cap * (1 + 1e-9), (spent, cap)
    status = as_json(cli("campaign", "status", "wcap", "--json", db=pg_url), 0)
    assert status["spent_usd"] == pytest.approx(spent, rel=1e-6)
    assert status["reserved_usd"] == 0.0
    eng.dispose()


# ---------------------------------------------------------------- liveness without guessing from PIDs


def _unshare_ok() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True).returncode == 0


def _absent_pid() -> int:
    """A PID no process of this (the host's) namespace has: the PID a process in a fresh namespace
    is given, so the old rule (`os.kill(pid, 0)` fails: the owner is dead) took its live leases."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    rng = random.Random()
    while True:
        pid = rng.randrange(2000, pid_max - 10)
        if not Path(f"/proc/{pid}").exists():
            return pid


# In the new PID namespace: this wrapper is PID 1; it makes the next PID `pid` and runs the command.
_WRAP = (
    "import subprocess, sys\n"
    "open('/proc/sys/kernel/ns_last_pid', 'w').write(str(int(sys.argv[1]) - 1))\n"
    "sys.exit(subprocess.call(sys.argv[2:]))\n"
)


def in_other_pid_namespace(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["unshare", "--pid", "--fork", sys.executable, "-c", _WRAP, str(_absent_pid()), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **FAKE_KEYS},
    )


needs_unshare = pytest.mark.skipif(not _unshare_ok(), reason="needs root and `unshare --pid`")


def test_an_owner_in_another_pid_namespace_or_boot_is_never_judged_dead() -> None:
    me = liveness.owner_id()
    host, _pid, nonce, ns, boot = me.split(":")
    gone = _absent_pid()
    assert liveness.dead_here(f"{host}:{gone}:{nonce}:{ns}:{boot}")  # here, and gone
    assert not liveness.dead_here(f"{host}:{os.getpid()}:{nonce}:{ns}:{boot}")  # here, alive
    assert not liveness.dead_here(f"{host}:{gone}:{nonce}:1{ns}:{boot}")  # another PID namespace
    assert not liveness.dead_here(f"{host}:{gone}:{nonce}:{ns}:0{boot[1:]}")  # another boot
    assert not liveness.dead_here(f"other{host}:{gone}:{nonce}:{ns}:{boot}")  # another host
    assert not liveness.dead_here(f"{host}:{gone}:{nonce}")  # an old-style owner: expiry only


@needs_unshare
@pytest.mark.postgres
def test_three_workers_two_in_other_pid_namespaces_call_each_job_once(pg_url: str) -> None:
    """Issue 17: 3 workers (2 under `unshare --pid --fork`, same host name) on 384 jobs made 527
    calls. Liveness is now each owner's advisory lock: exactly 384 calls."""
    with FakeServerProcess("--latency", "0.15", "--seed", "17") as fake:
        judge = f"openai:ns?base_url={fake.url}/v1"
        jobs = _campaign(pg_url, judge, groups=8, per_group=16, repeats=3)
        assert jobs == 384
        eng = make_engine(pg_url)
        args = ["--concurrency", "4", "--poll-seconds", "0.2"]
        worker = [sys.executable, "-m", "judgepanel", "--db", pg_url, "worker", "--json", *args]
        procs = [in_other_pid_namespace(worker)]
        _wait_for(lambda: counts(eng).get("done", 0) >= 8, procs)
        procs.append(start_worker(pg_url, *args))  # takes the first one's leases under the old rule
        _wait_for(lambda: counts(eng).get("done", 0) >= 60, procs)
        procs.append(in_other_pid_namespace(worker))  # takes the host worker's leases under the old rule
        try:
            for p in procs:
                out, err = p.communicate(timeout=240)
                assert p.returncode == 0, err.decode()
                assert json.loads(out)["status"] == "done"
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
        served = settled_chat_requests(fake)
        with eng.connect() as c:
            stored = int(c.execute(text("SELECT count(*) FROM request")).scalar_one())
            ok = c.execute(text("SELECT count(DISTINCT job_id), count(*) FROM verdict")).one()
        eng.dispose()
    assert counts_done(pg_url) == jobs
    assert served == stored == jobs, (served, stored)
    assert tuple(ok) == (jobs, jobs)


@needs_unshare
def test_a_run_in_another_pid_namespace_keeps_its_leases_on_sqlite(tmp_path: Path) -> None:
    """SQLite: a `campaign run` in another PID namespace (its PID absent here) holds leases; a
    second `campaign run` on the same file from this namespace must not take them over."""
    url = f"sqlite:///{tmp_path / 'ns.db'}"
    eng = tiny_db(url, n_groups=4, per_group=10)
    with FakeServerProcess("--latency", "0.3", "--seed", "19") as fake:
        api.create(
            eng,
            "ns",
            dataset=DATASET,
            protocol="pointwise",
            judges=[f"openai:ns?base_url={fake.url}/v1"],
            repeats=4,
        )
        run = [
            sys.executable,
            "-m",
            "judgepanel",
            "--db",
            url,
            "campaign",
            "run",
            "ns",
            "--json",
            "--concurrency",
            "4",
        ]
        first = in_other_pid_namespace(run)
        procs = [first]
        try:
            _wait_for(lambda: counts(eng).get("done", 0) >= 4, procs)
            second = subprocess.Popen(
                run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **FAKE_KEYS}
            )
            procs.append(second)
            for p in procs:
                _, err = p.communicate(timeout=240)
                assert p.returncode in (0, 3), err.decode()
                assert "Traceback" not in err.decode()
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
        served = settled_chat_requests(fake)
    assert counts(eng) == {"done": 160}
    with eng.connect() as c:
        stored = int(c.execute(text("SELECT count(*) FROM request")).scalar_one())
    eng.dispose()
    assert served == stored == 160, (served, stored)


def counts_done(url: str) -> int:
    eng = make_engine(url)
    try:
        return counts(eng).get("done", 0)
    finally:
        eng.dispose()


def _wait_for(cond: Any, procs: list[subprocess.Popen[bytes]], limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, "no progress"
        for p in procs:
            if p.poll() is not None:
                _, err = p.communicate()
                raise AssertionError(f"a process ended early ({p.returncode}): {err.decode()[-2000:]}")
        time.sleep(0.05)


@pytest.mark.postgres
def test_postgres_liveness_is_the_owners_advisory_lock(pg_url: str) -> None:
    """A live owner's leases are never taken, whatever its PID says; once it is gone (its lock
    free), another run takes them back at once, and its budget hold with them."""
    from judgepanel.store import campaigns as store
    from judgepanel.store.budget import budget_state, reserve

    eng = tiny_db(pg_url, n_groups=1, per_group=4)
    info = api.create(eng, "live", dataset=DATASET, protocol="pointwise", judges=["sim:x"], max_cost=1.0)
    host, _pid, _nonce, ns, boot = liveness.owner_id().split(":")
    owner = f"{host}:{_absent_pid()}:feedbeef:{ns}:{boot}"  # its PID names no process at all
    presence = liveness.Presence(eng)
    presence.hold(owner)
    assert len(store.lease_jobs(eng, info.id, owner, 3, lease_seconds=600)) == 3
    assert reserve(eng, info.id, owner, 0.25, 0.0, 600) == 0.25
    other = make_engine(pg_url)  # another process's view
    assert store.reclaim_dead_leases(other, info.id) == 0
    assert budget_state(other, info.id).reserved_usd == pytest.approx(0.25)
    presence.drop(owner)  # the owner ends without giving anything back (as a SIGKILL would)
    assert store.reclaim_dead_leases(other, info.id) == 3
    assert budget_state(other, info.id).reserved_usd == 0.0
    assert counts(other) == {"pending": 4}
    other.dispose()
    eng.dispose()


def test_batch_submissions_stay_under_the_campaign_cap(db_url: str, keys_env: dict[str, str]) -> None:
    """`campaign run --batch --max-cost`: a batch is submitted only with what its estimated cost
    (at the batch discount) leaves under the campaign's cap, reserved until the batch is closed;
    three batch runs together stay under the one cap."""
    from judgepanel.fake.server import FakeServer
    from tests.runner.test_batch import create, judge, run_batch

    eng = tiny_db(db_url)
    fake = FakeServer(batch_seconds=0.2, seed=5)
    fake.start_in_thread()
    try:
        create(db_url, "bprobe", judge("openai", fake.url, "bprobe"), limit=4)
        probe = run_batch(db_url, "bprobe")
        per_call = probe["cost_usd"] / probe["collected"]
        cap = 10 * per_call
        create(db_url, "bcap", judge("openai", fake.url, "bcap"), limit=20)
        first = run_batch(db_url, "bcap", "--max-cost", f"{cap:.10f}", code=3)
        assert first["status"] == "budget" and 0 < first["submitted"] < first["jobs"], first
        for _ in range(2):
            again = run_batch(db_url, "bcap", code=3)  # the recorded cap holds for later runs
            assert again["status"] == "budget", again
        status = as_json(cli("campaign", "status", "bcap", "--json", db=db_url), 0)
    finally:
        fake.stop()
        eng.dispose()
    assert status["max_cost_usd"] == pytest.approx(cap)
    assert 0 < status["spent_usd"] <= cap * (1 + 1e-9), (status["spent_usd"], cap)
    assert status["done"] < status["jobs"] and status["reserved_usd"] == 0.0
