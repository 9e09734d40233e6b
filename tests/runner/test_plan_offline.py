"""`campaign plan` is offline (issue 20): it neither imports a provider SDK nor asks a server
anything unless told to (`--probe`); the model a `base_url` judge's server runs, which enters the
request-cache key (`runner.served`), comes from what the campaign's runs recorded.

Requests are counted at the fake server (its own process); imports in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from sqlalchemy import Engine, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.store import campaigns as store
from judgepanel.store.models import Campaign
from tests.helpers import cli
from tests.runner.conftest import FAKE_KEYS, create_argv, tiny_db

SDKS = ("openai", "anthropic", "httpx")


def _db(url: str) -> Engine:
    eng = tiny_db(url)
    return eng


def _plan_in_a_fresh_interpreter(url: str, name: str, *extra: str) -> tuple[dict[str, object], list[str]]:
    """`campaign plan NAME --json` in a new process: (its JSON, the SDK packages it imported)."""
    probe = f"""
import contextlib, io, json, sys
from judgepanel.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--db", {url!r}, "campaign", "plan", {name!r}, "--json", *{list(extra)!r}])
    except SystemExit as exc:
        assert exc.code == 0, exc.code
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({list(SDKS)!r}))
print(json.dumps({{"plan": json.loads(out.getvalue()), "sdks": loaded}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **FAKE_KEYS},
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return got["plan"], got["sdks"]


def test_plan_asks_no_server_and_imports_no_sdk_unless_told_to_probe(
    sqlite_url: str, fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    eng = _db(sqlite_url)
    judges = (f"openai:local-o?base_url={fake.url}/v1", f"anthropic:local-a?base_url={fake.url}")
    for name in ("first", "second"):
        r = cli(*create_argv(name, *judges, extra=("--limit", "3")), db=sqlite_url)
        assert r.code == 0, r.stderr
    n0 = fake.stats()["requests"]

    # never run: nothing recorded, so nothing known about the served model, and it says so
    plan, sdks = _plan_in_a_fresh_interpreter(sqlite_url, "first")
    assert fake.stats()["requests"] == n0  # not one request, /v1/models included
    assert sdks == []
    assert (plan["calls"], plan["cached"]) == (6, 0)
    assert sorted(plan["served_model_unknown"]) == sorted(store.campaign_spec(eng, "first")[0].judges)
    text = cli("campaign", "plan", "first", db=sqlite_url)
    assert text.code == 0 and "--probe" in text.stderr
    assert fake.stats()["requests"] == n0

    # a run asks each server once and records the answer with the campaign
    ran = cli("campaign", "run", "first", "--json", db=sqlite_url)
    assert ran.code == 0, ran.stderr
    assert ran.json()["calls"] == 6
    with eng.connect() as conn:
        spec = conn.scalar(select(Campaign.spec).where(Campaign.name == "first"))
    assert set(spec["served_models"].values()) == {"sim"}  # what the fake server says it runs
    n1 = fake.stats()["requests"]

    # the second campaign asks the same judges the same questions: plan keys the cache on the
    # recorded served model and finds every answer, still without a request or an SDK
    plan, sdks = _plan_in_a_fresh_interpreter(sqlite_url, "second")
    assert fake.stats()["requests"] == n1
    assert sdks == []
    assert (plan["calls"], plan["cached"], plan["served_model_unknown"]) == (0, 6, [])

    # --probe asks: one GET /v1/models per base_url judge, and agrees (in this process: which
    # modules it imports is not checked here, so a fresh interpreter would only add its start-up)
    before = fake.stats()["by_path"].get("/v1/models", 0)
    r = cli("campaign", "plan", "second", "--json", "--probe", db=sqlite_url)
    assert r.code == 0, r.stderr
    probed = r.json()
    assert fake.stats()["by_path"].get("/v1/models", 0) - before == 2
    assert fake.stats()["requests"] - n1 == 2
    assert (probed["calls"], probed["cached"]) == (0, 6)
    eng.dispose()


def test_a_different_model_recorded_by_a_later_run_changes_what_plan_counts_as_cached(
    sqlite_url: str, fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """The record is the server's answer, not a constant: swap the weights, run, and plan no longer
    expects the old model's answers to serve."""
    eng = _db(sqlite_url)
    judge = f"openai:swap?base_url={fake.url}/v1"
    for name in ("a", "b"):
        assert cli(*create_argv(name, judge, extra=("--limit", "2")), db=sqlite_url).code == 0
    assert cli("campaign", "run", "a", "--json", db=sqlite_url).json()["calls"] == 2
    assert cli("campaign", "plan", "b", "--json", db=sqlite_url).json()["cached"] == 2
    store.remember_served_models(eng, "a", {store.campaign_spec(eng, "a")[0].judges[0]: "other-7b"})
    assert cli("campaign", "plan", "b", "--json", db=sqlite_url).json()["cached"] == 0
    eng.dispose()
