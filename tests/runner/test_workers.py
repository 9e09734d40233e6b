"""`judgepanel worker`: several worker processes (the real CLI in subprocesses) on one PostgreSQL
database against the fake provider server (another process): every job done exactly once, none
lost, a SIGKILLed worker's leases taken over after they expire, SIGTERM handled like Ctrl-C, rate
limits shared through the database, and a second worker on SQLite refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from judgepanel.datasets.records import ParsedDataset
from judgepanel.fake.server import FakeServerProcess
from judgepanel.runner import campaign as api
from judgepanel.store import ratebucket
from judgepanel.store.engine import make_engine
from judgepanel.store.imports import import_parsed
from judgepanel.store.models import utcnow
from tests.helpers import cli, migrate_db
from tests.runner.conftest import DATASET, FAKE_KEYS, make_items

LEASE_S = 6.0  # long enough that a loaded machine still renews in time (heartbeat every 2 s)


def _campaign(url: str, judge: str, *, groups: int, per_group: int, repeats: int, name: str = "w") -> int:
    migrate_db(url)
    eng = make_engine(url)
    parsed = ParsedDataset(
        kind="items",
        source_hash=f"w-{groups}-{per_group}",
        items=make_items(groups, per_group),
        annotators=[],
        labels=[],
    )
    import_parsed(eng, DATASET, parsed)
    info = api.create(eng, name, dataset=DATASET, protocol="pointwise", judges=[judge], repeats=repeats)
    eng.dispose()
    return info.jobs


def start_worker(url: str, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "judgepanel", "--db", url, "worker", "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **FAKE_KEYS},
    )


def counts(eng: Engine) -> dict[str, int]:
    with eng.connect() as c:
        return {
            str(k): int(v) for k, v in c.execute(text("SELECT status, count(*) FROM job GROUP BY status"))
        }


def wait_done(
    eng: Engine, at_least: int, procs: Sequence[subprocess.Popen[bytes]], limit: float = 240
) -> None:
    deadline = time.monotonic() + limit
    while counts(eng).get("done", 0) < at_least:
        assert time.monotonic() < deadline, f"no progress: {counts(eng)}"
        assert any(p.poll() is None for p in procs), "every worker exited early"
        time.sleep(0.05)


def chat_requests(fake: FakeServerProcess) -> int:
    return int(fake.stats()["by_path"].get("/v1/chat/completions", 0))


def settled_chat_requests(fake: FakeServerProcess) -> int:
    last, since = chat_requests(fake), time.monotonic()
    while time.monotonic() - since < 0.5:
        time.sleep(0.05)
        now = chat_requests(fake)
        if now != last:
            last, since = now, time.monotonic()
    return last


@pytest.mark.postgres
def test_four_workers_kill_and_term_every_job_once(pg_url: str) -> None:
    with FakeServerProcess(
        "--latency",
        "0.01",
        "--fault",
        "500=0.02",
        "--fault",
        "429=0.01",
        "--retry-after",
        "0.05",
        "--seed",
        "5",
    ) as fake:
        judge = f"openai:workers?base_url={fake.url}/v1"
        # 1000 jobs, not 2000: the kill lands after 200 are done, the SIGTERM after 450 (a fifth and
        # 45 % in, as before), the injected faults still come ~20 times each, and the survivors still
        # wait out the killed worker's 6 s leases (the lease wait, not the job count, is what shows
        # the takeover happens only after expiry); the other 1000 only added calls
        jobs = _campaign(pg_url, judge, groups=10, per_group=25, repeats=4)
        assert jobs == 1000
        eng = make_engine(pg_url)
        args = ("--concurrency", "8", "--lease-seconds", str(LEASE_S), "--poll-seconds", "0.2")
        procs = [start_worker(pg_url, *args) for _ in range(4)]
        victim, stopped, survivors = procs[0], procs[1], procs[2:]
        try:
            wait_done(eng, 200, procs)
            victim.send_signal(signal.SIGKILL)
            victim.communicate()
            killed_at = utcnow()
            assert victim.returncode == -signal.SIGKILL
            # the victim stands for an owner whose liveness cannot be checked (no advisory lock: an
            # older version's `host:nonce` owner): its leases can only expire. (The
            # workers here share one host, and a worker starting a new pass takes a dead local
            # process's jobs at once — right, and tested elsewhere, but not what is under test;
            # with a fast runner a new pass often began before the leases expired.)
            with eng.begin() as c:
                held = dict(
                    c.execute(
                        text(
                            "UPDATE job SET lease_owner = 'elsewhere:' || split_part(lease_owner, ':', 3) "
                            "WHERE status = 'running' AND lease_owner LIKE :o RETURNING id, lease_expires"
                        ),
                        {"o": f"%:{victim.pid}:%"},
                    ).all()
                )
            assert held, "the killed worker held no leases"
            wait_done(eng, 450, procs)
            # (after the leases expire: a worker starting a new pass would otherwise see the dead
            # process on this host and take its jobs at once, which is right but not under test)
            time.sleep(max(0.0, (max(held.values()) - utcnow()).total_seconds()))
            stopped.send_signal(signal.SIGTERM)
            out, err = stopped.communicate(timeout=30)
            assert stopped.returncode == 130, err.decode()
            assert json.loads(out)["status"] == "interrupted"
            assert "Traceback" not in err.decode()
            for p in survivors:
                out, err = p.communicate(timeout=240)
                assert p.returncode == 0, err.decode()
                summary = json.loads(out)
                assert summary["status"] == "done" and summary["done"] == jobs
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
        served = settled_chat_requests(fake)
        by_status = fake.stats()["by_status"]
        with eng.connect() as c:
            assert counts(eng) == {"done": jobs}
            assert c.execute(text("SELECT count(*) FROM job WHERE lease_owner IS NOT NULL")).scalar() == 0
            ok = dict(
                c.execute(
                    text("SELECT job_id, count(*) FROM verdict WHERE parse_status = 'ok' GROUP BY job_id")
                ).all()
            )
            stored = int(c.execute(text("SELECT count(*) FROM request")).scalar_one())
            failed_attempts = int(c.execute(text("SELECT count(*) FROM response WHERE NOT ok")).scalar_one())
            # when each job the killed worker held got its answer, and its stored attempt numbers
            retaken = c.execute(
                text(
                    "SELECT r.job_id, r.created_at FROM request r JOIN verdict v ON v.request_id = r.id "
                    "WHERE v.parse_status = 'ok' AND r.job_id = ANY(:ids)"
                ),
                {"ids": list(held)},
            ).all()
        eng.dispose()
    # every job exactly one verdict (also a database constraint: one verdict per job attempt)
    assert len(ok) == jobs and set(ok.values()) == {1}
    # every request the server answered is stored, except what the killed worker had in flight or
    # answered but not yet committed — calls for jobs it held, at most one each (a retry of a held
    # job would need a stored failed attempt first); those jobs were asked again exactly once
    # (their one ok verdict above); the worker stopped with SIGTERM stored everything it asked
    lost = served - stored
    assert 0 <= lost <= len(held), (served, stored, len(held))
    # injected faults were met and retried, stored as failed attempts
    assert failed_attempts >= 1 and int(by_status.get("500", 0)) >= 1
    # the killed worker's leases were taken over, and only after they expired
    assert len(retaken) == len(held)
    late = [(jid, at) for jid, at in retaken if at >= killed_at]
    assert late, "no job of the killed worker was retaken after the kill"
    assert all(at >= held[jid] - timedelta(seconds=0.2) for jid, at in late)


@pytest.mark.postgres
def test_four_workers_share_one_rpm_limit(pg_url: str) -> None:
    rpm = 3000
    with FakeServerProcess("--rpm", str(rpm), "--retry-after", "0.2") as fake:
        judge = f"openai:shared?base_url={fake.url}/v1"
        jobs = _campaign(pg_url, judge, groups=10, per_group=10, repeats=3)
        assert jobs == 300
        procs = [start_worker(pg_url, "--rpm", str(rpm), "--concurrency", "16") for _ in range(4)]
        for p in procs:
            _, err = p.communicate(timeout=240)
            assert p.returncode == 0, err.decode()
        stats = fake.stats()
        eng = make_engine(pg_url)
        with eng.connect() as c:
            first, last = c.execute(text("SELECT min(created_at), max(created_at) FROM request")).one()
            buckets = c.execute(text("SELECT key, refill_per_s FROM rate_bucket")).all()
        eng.dispose()
    answered = int(stats["by_path"]["/v1/chat/completions"])
    limited = int(stats["by_status"].get("429", 0))
    assert answered - limited == jobs
    assert limited / answered < 0.01, stats
    assert buckets == [(f"rpm:{judge}", rpm / 60)]
    # and the limit was used, not starved: 300 calls at 50/s take 6 s (stored from first to last;
    # the workers' start-up is not counted). The bound is 2.5x the ideal + 2 s, not tighter: the
    # five processes share the machine's cores, and at load 24 on 2 cores the same run (then 600
    # calls) stored its calls over 1.8x the ideal with a correct limiter. A limiter far too slow
    # still fails: one that gives each of the four workers its own quarter of the limit takes 4x
    # the ideal (24 s against a bound of 17 s), one that refills per minute instead of per second
    # never finishes within the workers' timeout. (300 calls, not 600: the same margins in half
    # the wait.)
    ideal = jobs / (rpm / 60)
    assert (last - first).total_seconds() < ideal * 2.5 + 2


def test_shared_bucket_take_is_atomic_and_refills(engine: Engine) -> None:
    ratebucket.ensure_bucket(engine, "rpm:t", capacity=2, refill_per_s=10.0)
    started = time.monotonic()
    assert ratebucket.take(engine, "rpm:t", 1) == 0.0
    assert ratebucket.take(engine, "rpm:t", 1) == 0.0
    wait = ratebucket.take(engine, "rpm:t", 1)  # empty: a debt of one token, 0.1 s at 10/s
    # less whatever refilled between the first take and this one (on a loaded machine the three
    # takes have taken 70 ms); 10 ms of slack for the database clock against ours
    refilled = time.monotonic() - started
    assert 0.1 - refilled - 0.01 < wait <= 0.1
    time.sleep(0.3)  # refills 3 tokens, capped at 2, minus the debt
    assert ratebucket.take(engine, "rpm:t", 1) == 0.0
    # many takers at once: no take is lost (a slow refill, so the level is the count of takes)
    ratebucket.ensure_bucket(engine, "rpm:many", capacity=1000, refill_per_s=1e-6)
    n_threads, each = (4, 25) if engine.dialect.name == "sqlite" else (8, 25)

    def hammer() -> None:
        for _ in range(each):
            ratebucket.take(engine, "rpm:many", 1)

    threads = [threading.Thread(target=hammer) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with engine.connect() as c:
        level = c.execute(text("SELECT tokens FROM rate_bucket WHERE key = 'rpm:many'")).scalar_one()
    assert level == pytest.approx(1000 - n_threads * each, abs=0.01)


def test_second_worker_on_sqlite_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "one.db"
    url = f"sqlite:///{db}"
    migrate_db(url)
    first = start_worker(url, "--follow", "--poll-seconds", "0.1")
    try:
        lock = Path(f"{db}.worker-lock")
        deadline = time.monotonic() + 30
        while not (lock.exists() and lock.read_text().strip() == str(first.pid)):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        before = db.read_bytes()
        # the second worker runs in this process (the first is the real other process holding the
        # lock; a third interpreter start only added its start-up)
        second = cli("worker", db=url)
        assert second.code == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "another judgepanel worker" in lines[0] and "PostgreSQL" in lines[0]
        assert db.read_bytes() == before
    finally:
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=30)
    assert first.returncode == 130, err.decode()
    assert json.loads(out)["status"] == "interrupted"
    # once the first is gone, a worker starts again (nothing to do: exit 0)
    again = cli("worker", "--json", db=url)
    assert again.code == 0, again.stderr
    assert again.json()["jobs"] == 0


@pytest.mark.postgres
def test_renewing_leases_beside_the_writer_never_deadlocks(pg_url: str) -> None:
    """A worker's heartbeat renews its leases in one transaction while its writer updates the same
    job rows in another; both must lock rows in the same (id) order. Before, the writer locked in
    the order calls finished and PostgreSQL aborted one side with "deadlock detected"."""
    from judgepanel.store import campaigns as store
    from judgepanel.store.campaigns import AttemptRow, Batch

    _campaign(pg_url, "openai:nowhere?base_url=http://127.0.0.1:9/v1", groups=10, per_group=30, repeats=1)
    eng = make_engine(pg_url)
    owner = "host:1:test"
    cid = store.campaign_id(eng, "w")
    ids = [j.id for j in store.lease_jobs(eng, cid, owner, 300)]
    assert len(ids) == 300
    errors: list[BaseException] = []
    writing = threading.Event()

    def writer() -> None:
        try:
            for n in range(1, 16):
                rows = [
                    AttemptRow(jid, n, "h", "t", "th", [], {}, ok=False, error_class="transient")
                    for jid in reversed(ids)  # finished in another order than the rows' ids
                ]
                store.write_batch(eng, Batch(attempts=rows), owner)
        except BaseException as exc:
            errors.append(exc)
        finally:
            writing.set()

    def heartbeat() -> None:
        try:
            while not writing.is_set():
                assert store.renew_leases(eng, owner, lease_seconds=60) == 300
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=heartbeat)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eng.dispose()
    assert errors == []


# A SIGTERM that lands at a fixed moment of start-up, in a real process: the product's own step is
# wrapped so that the process signals itself right after it (after entering it, for a context
# manager); the real CLI runs around it.
_SIGNAL_AFTER = """
import contextlib, importlib, os, signal, sys
m = importlib.import_module("{module}")
for part in "{owner}".split("."):
    m = getattr(m, part) if part else m
real = getattr(m, "{name}")
def wrapped(*a, **k):
    out = real(*a, **k)
    if not hasattr(out, "__enter__"):
        os.kill(os.getpid(), signal.SIGTERM)
        return out
    @contextlib.contextmanager
    def entered():  # a context manager: the signal comes once it is entered
        with out as value:
            os.kill(os.getpid(), signal.SIGTERM)
            yield value
    return entered()
setattr(m, "{name}", wrapped)
from judgepanel.cli import main
sys.argv = ["judgepanel", *sys.argv[1:]]
main()
"""


def _signalled(module: str, owner: str, name: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    code = _SIGNAL_AFTER.format(module=module, owner=owner, name=name)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        timeout=120,
        env={**os.environ, **FAKE_KEYS},
    )


def test_a_sigterm_right_after_the_sqlite_lock_is_taken_is_exit_130(tmp_path: Path) -> None:
    """CI found it: the lock file named the worker before its event loop took SIGTERM, so a SIGTERM in
    that gap killed the process (-15) instead of ending the run (130, `interrupted`)."""
    db = tmp_path / "one.db"
    url = f"sqlite:///{db}"
    migrate_db(url)
    done = _signalled(
        "judgepanel.runner.worker",
        "",
        "single_worker_on_sqlite",
        "--db",
        url,
        "worker",
        "--json",
        "--follow",
        "--poll-seconds",
        "0.1",
    )
    assert done.returncode == 130, (done.returncode, done.stderr.decode())
    assert json.loads(done.stdout)["status"] == "interrupted"
    assert (
        done.stderr.decode()
        .strip()
        .splitlines()[-1]
        .endswith("interrupted; finished calls are stored and unfinished jobs handed back")
    )


@pytest.mark.parametrize("batch", [False, True], ids=["realtime", "batch"])
def test_a_sigterm_before_a_campaign_runs_loop_takes_over_is_exit_130(tmp_path: Path, batch: bool) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    # a batch run needs a judge with a batch API; it is signalled before it could reach this one
    judge = "openai:gpt-4o-mini?base_url=http://127.0.0.1:9/v1" if batch else "sim:panel"
    jobs = _campaign(url, judge, groups=1, per_group=3, repeats=1)
    module, cls = (
        ("judgepanel.runner.batch", "BatchRunner") if batch else ("judgepanel.runner.executor", "Runner")
    )
    flags = ("--batch",) if batch else ()
    done = _signalled(module, cls, "__init__", "--db", url, "campaign", "run", "w", "--json", *flags)
    assert done.returncode == 130, (done.returncode, done.stderr.decode())
    summary = json.loads(done.stdout)
    assert summary["status"] == "interrupted" and summary["jobs"] == jobs
    eng = make_engine(url)
    try:
        assert counts(eng) == {"pending": jobs}  # stopped before it asked anything; a rerun resumes
        with eng.connect() as c:
            assert c.execute(text("SELECT count(*) FROM provider_batch")).scalar_one() == 0
    finally:
        eng.dispose()
    if not batch:
        again = cli("campaign", "run", "w", "--json", db=url)
        assert again.code == 0 and again.json()["done"] == jobs
