"""Issue 29 §1–§2: what a hostile or broken server sends costs at most one failed attempt, and the
cap holds whatever the costs are computed from. The real SDKs against the fake server's hostile
faults (`judgepanel.fake.faults`), through the CLI, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from judgepanel.fake.server import FakeServerProcess
from judgepanel.providers.base import ChatRequest, ChatResult
from judgepanel.runner import campaign as api
from judgepanel.runner.options import RunOptions
from judgepanel.store import campaigns as store
from judgepanel.store.models import Item, Job, Request, Response
from tests.helpers import cli
from tests.runner.conftest import DATASET, ScriptedProvider, create_argv, reply, tiny_db

CAP = "256k"
PRICES = "price_in=20&price_out=200"


@pytest.fixture
def db(db_url: str) -> Iterator[tuple[str, Engine]]:
    eng = tiny_db(db_url, n_groups=1, per_group=2)
    yield db_url, eng
    eng.dispose()


def _judges(fake: FakeServerProcess, fault: str, extra: str = "") -> list[str]:
    return [
        f"openai:h!{fault}?base_url={fake.url}/v1{extra}",
        f"anthropic:h!{fault}?base_url={fake.url}{extra}",
    ]


def _chat_calls(fake: FakeServerProcess) -> int:
    by_path = fake.stats()["by_path"]
    return int(by_path.get("/v1/chat/completions", 0) + by_path.get("/v1/messages", 0))


@pytest.mark.parametrize("fault", ["gzipgzip", "gzipgzipjunk"])
def test_a_doubly_compressed_reply_is_capped_by_what_the_client_decodes(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str], fault: str
) -> None:
    """`content-encoding: gzip, gzip`: ~600 bytes on the wire, 8 MB once httpx has decoded both
    layers. Before, only a single gzip was counted: the 8 MB bodies were stored whole (and the
    non-JSON one, on the malformed path, once per retry). Now: one `oversize` attempt per job."""
    url, eng = db
    judges = _judges(fake, f"{fault},huge=8000000", f"&max_reply_bytes={CAP}")
    assert cli(*create_argv("bomb", *judges, extra=("--limit", "2")), db=url).code == 0
    before = _chat_calls(fake)
    summary = cli("campaign", "run", "bomb", "--json", db=url).json(code=3)
    assert summary["errors"] == {"oversize": 4} and summary["calls"] == 4
    assert _chat_calls(fake) - before == 4  # not retried
    with eng.connect() as conn:
        rows = conn.execute(select(Response.raw_body, Response.text, Response.error_message)).all()
    assert len(rows) == 4
    for body, text, message in rows:
        assert body is None and text is None
        assert "once decompressed" in message and "max_reply_bytes=262,144" in message


def test_the_client_asks_only_for_codings_it_counts_and_refuses_others(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    assert cli(*create_argv("br", *_judges(fake, "brcoded"), extra=("--limit", "1")), db=url).code == 0
    fake.reset()
    summary = cli("campaign", "run", "br", "--json", db=url).json(code=3)
    assert summary["errors"] == {"fatal": 2}, summary
    sent = fake.requests()
    assert {r["headers"].get("accept-encoding") for r in sent} == {"gzip, deflate"}
    with eng.connect() as conn:
        rows = conn.execute(select(Response.raw_body, Response.error_message)).all()
    assert all(body is None and "content-encoding br was not asked for" in msg for body, msg in rows)


def test_lone_surrogates_nul_and_overlong_fields_are_stored_cleaned(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """`\\ud800` and NUL in the text, the rationale and `model`; a 10,000-character `model`,
    `system_fingerprint` and `finish_reason`. Before, the writer's batch raised
    (UnicodeEncodeError; on PostgreSQL also NUL and the column widths): exit 1, nothing stored."""
    url, eng = db
    judges = [*_judges(fake, "surrogate"), f"openai:h!longfields?base_url={fake.url}/v1"]
    assert cli(*create_argv("odd", *judges, extra=("--limit", "2")), db=url).code == 0
    ran = cli("campaign", "run", "odd", "--json", db=url)
    summary = ran.json()
    assert (summary["done"], summary["calls"]) == (6, 6), summary
    with eng.connect() as conn:
        rows = conn.execute(
            select(Response.text, Response.raw_body, Response.model_returned, Response.system_fingerprint)
        ).all()
    assert len(rows) == 6
    surrogates = [r for r in rows if "\ufffd" in (r.text or "")]
    assert len(surrogates) == 4
    for r in surrogates:
        assert "\x00" not in r.text and "\ufffd" in (r.model_returned or "")
        assert json.loads(r.raw_body)  # the raw body as received (its escapes are ASCII)
    long = [r for r in rows if r.model_returned and len(r.model_returned) == 200]
    assert len(long) == 2 and all(len(r.system_fingerprint) == 200 for r in long)


@pytest.mark.parametrize("fault", ["bigtokens", "negtokens", "nousage", "strtokens", "badcache", "negcache"])
def test_a_reply_that_does_not_say_its_cost_is_charged_its_reservation(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str], fault: str
) -> None:
    """Token counts of 10**40 (before: OverflowError, the batch lost and every re-run paying
    again), negative (a negative cost: the budget grew), missing, not whole numbers, or a cached
    count negative or above the prompt (OpenAI): the counts are stored as unknown and the call is
    charged what was reserved for it, never 0, and the summary says so."""
    url, eng = db
    judges = _judges(fake, fault, f"&{PRICES}")
    assert cli(*create_argv("usage", *judges, extra=("--limit", "2")), db=url).code == 0
    summary = cli("campaign", "run", "usage", "--json", db=url).json()
    assert summary["done"] == 4
    with eng.connect() as conn:
        rows = conn.execute(select(Response.model_returned, Response.input_tokens, Response.cost_usd)).all()
    assert len(rows) == 4
    for r in rows:
        assert r.cost_usd is not None and r.cost_usd > 0, r
        # Anthropic reports no prompt total to hold its cache counts against: there a cache count
        # stays (and, as these judges have no cache price, is charged the reservation too)
        if not (fault == "badcache" and r.input_tokens and r.input_tokens > 1_000_000):
            assert r.input_tokens is None, r
    assert summary["spent_usd"] == pytest.approx(sum(r.cost_usd for r in rows), rel=1e-9)
    assert any("charged its reservation" in w for w in summary["warnings"]), summary["warnings"]


def test_the_cap_holds_against_replies_without_usable_counts(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    """A cap of 3.5 reservations: a judge whose replies report `usage: null` (before: counted as
    free, so it bought all 12 jobs) stops after 3 calls, with what it spent under the cap; a
    normal judge under the same cap pays what it used (far less than its reservation), so it buys
    more."""
    url, eng = db
    judge = f"openai:h!nousage?base_url={fake.url}/v1&{PRICES}&temperature=0.5"
    assert cli(*create_argv("probe", judge, extra=("--limit", "1")), db=url).code == 0
    assert cli("campaign", "run", "probe", "--json", db=url).json()["calls"] == 1
    with eng.connect() as conn:
        reservation = conn.execute(select(Response.cost_usd)).scalar_one()
    cap = 3.5 * reservation
    bought = {}
    for name, spec in (("capped", judge), ("control", judge.replace("!nousage", ""))):
        argv = create_argv(name, spec, extra=("--repeats", "6", "--max-cost", f"{cap:.10f}"))
        assert cli(*argv, db=url).code == 0
        before = _chat_calls(fake)
        ran = cli("campaign", "run", name, "--concurrency", "1", "--json", db=url)
        summary = ran.json(code=3 if name == "capped" else ran.code)
        bought[name] = _chat_calls(fake) - before
        assert summary["status"] == ("budget" if name == "capped" else summary["status"]), summary
        status = cli("campaign", "status", name, "--json", db=url).json()
        assert 0 < status["spent_usd"] <= cap + 1e-12
    assert bought["capped"] == 3, bought
    assert bought["control"] > 3, bought


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".json", '{"openai:gpt-4o-mini": {"input": NaN, "output": 1}}'),
        (".toml", '["openai:gpt-4o-mini"]\ninput = nan\noutput = 1\n'),
        (".yaml", "openai:gpt-4o-mini: {input: 1, output: .inf}\n"),
    ],
)
def test_a_price_file_with_a_non_finite_price_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    db: tuple[str, Engine],
    fake: FakeServerProcess,
    keys_env: dict[str, str],
    suffix: str,
    text: str,
) -> None:
    """Before, NaN passed `min(...) < 0` and every call went out under a $0.000001 cap ("spent
    nan USD")."""
    url, eng = db
    judge = f"openai:gpt-4o-mini?base_url={fake.url}/v1"
    assert cli(*create_argv("nan", judge), db=url).code == 0
    prices = tmp_path / f"prices{suffix}"
    prices.write_text(text)
    monkeypatch.setenv("JUDGEPANEL_PRICES", str(prices))
    before = _chat_calls(fake)
    out = cli("campaign", "run", "nan", "--max-cost", "0.000001", db=url)
    assert out.code == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "must be finite numbers" in out.stderr
    assert _chat_calls(fake) == before
    with eng.connect() as conn:
        assert conn.execute(select(Response.id)).first() is None


def test_a_reply_the_database_refuses_is_one_failed_attempt_not_the_lost_batch(db_url: str) -> None:
    """The last line behind the cleaning: a reply with a value no column holds (an HTTP status of
    10**40, which `providers.replies` does not bound: providers take it from the HTTP layer) is
    stored as one failed attempt without the reply; the batch's other replies are stored. Before,
    the whole batch raised: exit 1 and nothing stored, so every re-run paid again."""
    eng = tiny_db(db_url, n_groups=1, per_group=4)
    try:
        api.create(eng, "bad", dataset=DATASET, protocol="pointwise", judges=["sim:x"], limit=4)
        with eng.connect() as conn:
            job, output = conn.execute(
                select(Job.id, Item.output)
                .join(Item, Item.id == Job.item_id)
                .where(Item.external_id == "g0-s0")
            ).one()

        def script(req: ChatRequest, n: int) -> ChatResult:
            good = reply('{"rationale": "fine", "score": 4}')
            return replace(good, http_status=10**40) if output in req.messages[-1]["content"] else good

        provider = ScriptedProvider("sim:x", script)
        options = RunOptions(flush_ms=1000, batch_size=100)
        summary = api.run(eng, "bad", options, provider_factory=lambda s, n: provider)
        st = store.campaign_status(eng, "bad")
        assert (st.done, st.failed, st.failed_by_class) == (3, 1, {"fatal": 1}), summary
        with eng.connect() as conn:
            rows = conn.execute(
                select(Request.job_id, Response.error_class, Response.text, Response.error_message).join(
                    Response, Response.request_id == Request.id
                )
            ).all()
        assert len(rows) == 4 and len(provider.calls) == 4
        bad = [r for r in rows if r.error_class is not None]
        assert len(bad) == 1 and bad[0].job_id == job and bad[0].text is None
        assert "could not be stored" in bad[0].error_message
    finally:
        eng.dispose()
