"""A key that a provider echoes in a 200 reply (in the text, a rationale, `model`,
`system_fingerprint`) never reaches the store: the fake server's `echo` fault plants it, and the
whole database dump is searched for it on both backends."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url

from judgepanel.fake.injection import key_forms
from judgepanel.fake.server import FakeServerProcess
from judgepanel.store.engine import make_engine
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import Response, Verdict
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, load_tiny


@pytest.fixture
def db(db_url: str) -> Iterator[tuple[str, Engine]]:
    eng = make_engine(db_url)
    upgrade(eng)
    load_tiny(eng)
    yield db_url, eng
    eng.dispose()


def _dump(url: str, eng: Engine) -> bytes:
    """Every byte the database holds: the SQLite files, or `pg_dump` of the PostgreSQL database."""
    eng.dispose()
    if url.startswith("sqlite"):
        path = Path(make_url(url).database or "")
        return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    return subprocess.run(["pg_dump", "--no-owner", plain], check=True, capture_output=True).stdout


def test_keys_echoed_in_a_200_reply_are_not_stored(
    db: tuple[str, Engine], fake: FakeServerProcess, keys_env: dict[str, str]
) -> None:
    url, eng = db
    judges = [
        f"openai:echo-o!echo?base_url={fake.url}/v1",  # structured: the key inside the JSON rationale
        f"openai:echo-p!echo?base_url={fake.url}/v1&structured=off",  # prose: the key in the text
        f"anthropic:echo-a!echo?base_url={fake.url}",  # tool input; no system_fingerprint
    ]
    runs = [
        cli(
            *create_argv("echo", *judges, protocol="pairwise", extra=("--pairs", PAIRS, "--limit", "3")),
            db=url,
        ),
        cli("campaign", "run", "echo", "--json", db=url),
        cli("campaign", "status", "echo", "--json", db=url),
    ]
    assert runs[0].code == 0, runs[0].stderr
    ran = runs[1].json()
    assert (ran["done"], ran["failed"]) == (18, 0), ran
    echoed = [r for r in fake.requests(limit=200) if r.get("fault") == "echo"]
    assert len(echoed) >= 18  # the server did plant the keys
    with eng.connect() as conn:
        models = conn.execute(select(Response.model_returned, Response.system_fingerprint)).all()
        rationales = conn.execute(select(Verdict.rationale)).scalars().all()
    assert len(models) == 18 and all("[redacted]" in m for m, _ in models)
    assert {f for _, f in models} == {"[redacted]", None}  # OpenAI's fingerprint was the key itself
    assert len(rationales) == 18 and all(r and "[redacted]" in r for r in rationales)
    dump = _dump(url, eng)
    for key in keys_env.values():
        for part in (key, key[-12:], key[:20]):
            assert part.encode() not in dump, part
        for r in runs:
            assert key not in r.stdout and key not in r.stderr


def _forms(key: str) -> list[str]:
    return [key, *key_forms(key)]


def _assert_no_key(where: str, text: str, keys: list[str]) -> None:
    """No key in any form the fake server sent it in, and not even its letters and digits in order
    once punctuation and whitespace are dropped (the forms split or reformatted)."""
    bare = re.sub(r"[^a-z0-9]", "", text.lower())
    for key in keys:
        for form in _forms(key):
            assert form not in text, f"{where}: {form!r}"
        alnum = re.sub(r"[^a-z0-9]", "", key.lower())
        for folded in (alnum, alnum[::-1], key.encode().hex()):
            assert folded not in bare, f"{where}: {folded!r} once reformatting is undone"


def test_every_reversible_form_of_an_echoed_key_is_cut_everywhere(
    db: tuple[str, Engine],
    fake: FakeServerProcess,
    keys_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The `echoforms` server sends each key back as base64, base64url, hex, reversed, upper- and
    lower-case, `-` → `_`, split by a space, a newline, `.` and `/`, and with `...` inserted, in
    the text, every rationale, `model` and `system_fingerprint`; `echo401` puts them in an error
    message. Nothing of it reaches the database (file bytes / pg_dump), any export, the report or
    any `--json` output."""
    url, eng = db
    together = "tg-judgepanel-together-9a8b7c6d5e4f3a2b1c0d"
    monkeypatch.setenv("TOGETHER_API_KEY", together)
    keys = [*keys_env.values(), together]
    judges = [
        f"openai:forms-o!echoforms?base_url={fake.url}/v1",
        f"openai:forms-p!echoforms?base_url={fake.url}/v1&structured=off",
        f"anthropic:forms-a!echoforms?base_url={fake.url}",
        f"openai:forms-t!echoforms?base_url={fake.url}/v1&key_env=TOGETHER_API_KEY",
        f"openai:forms-e!echo401?base_url={fake.url}/v1",
        f"anthropic:forms-e!echo401?base_url={fake.url}",
    ]
    outputs = [
        cli(
            *create_argv("forms", *judges, protocol="pairwise", extra=("--pairs", PAIRS, "--limit", "2")),
            db=url,
        ),
        cli("campaign", "run", "forms", "--json", db=url),
        cli("campaign", "status", "forms", "--json", db=url),
        cli("campaign", "plan", "forms", "--json", db=url),
        cli("query", "select * from response", "--format", "json", db=url),
    ]
    assert outputs[0].code == 0, outputs[0].stderr
    ran = json.loads(outputs[1].stdout)
    assert (ran["done"], ran["failed"]) == (16, 8), ran
    planted = [r for r in fake.requests(limit=400) if r.get("fault") in ("echoforms", "echo401")]
    assert len(planted) >= 24  # the server did send the keys back
    files: dict[str, str] = {}
    for what in ("verdicts", "attempts", "clauses", "labels"):
        for fmt in ("csv", "jsonl", "parquet"):
            out = tmp_path / f"{what}.{fmt}"
            r = cli("export", "forms", "--format", fmt, "--what", what, "--out", str(out), "--json", db=url)
            assert r.code == 0, r.stderr
            outputs.append(r)
            if fmt == "parquet":
                import pyarrow.parquet as pq

                files[out.name] = json.dumps(pq.read_table(out).to_pylist(), default=str)
            else:
                files[out.name] = out.read_text(encoding="utf-8")
    for fmt in ("html", "md"):
        out = tmp_path / f"report.{fmt}"
        r = cli("report", "forms", "--out", str(out), "--format", fmt, "--bootstrap", "0", "--json", db=url)
        assert r.code == 0, r.stderr
        outputs.append(r)
        files[out.name] = out.read_text(encoding="utf-8")
        for extra in (tmp_path / "report_files").glob("*.svg"):
            files[extra.name] = extra.read_text(encoding="utf-8")
    attempts = files["attempts.jsonl"]
    assert attempts.count("[redacted]") >= 12  # the forms were there, and were cut
    with eng.connect() as conn:
        messages = conn.execute(select(Response.error_message).where(Response.ok.is_(False))).scalars().all()
    assert len(messages) == 8 and all("bad key [redacted]" in m for m in messages), messages
    for name, text in files.items():
        _assert_no_key(name, text, keys)
    for i, r in enumerate(outputs):
        _assert_no_key(f"output {i} stdout", r.stdout, keys)
        _assert_no_key(f"output {i} stderr", r.stderr, keys)
    _assert_no_key("database", _dump(url, eng).decode("latin-1"), keys)


def test_error_lines_never_show_a_configured_key(db: tuple[str, Engine], keys_env: dict[str, str]) -> None:
    """Whatever a one-line error quotes (here a dataset name the user pasted a reversed, base64'd
    key into) passes the same redaction as everything stored."""
    url, _ = db
    key = keys_env["OPENAI_API_KEY"]
    for form in key_forms(key)[:5]:
        r = cli(*create_argv("x", "sim:a", dataset=f"data-{form}"), db=url)
        assert r.code == 2 and "[redacted]" in r.stderr, r.stderr
        _assert_no_key("stderr", r.stderr, [key])


def _undone(text: str) -> str:
    """`text` with the natural re-encodings undone, independently of `providers.unmask`: HTML
    character references, percent-encoding, `\\uXXXX` escapes (also escaped twice), Unicode
    compatibility forms, invisible format characters; each twice over."""
    import html
    import unicodedata
    from urllib.parse import unquote

    for _ in range(2):
        text = html.unescape(text)
        text = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
        text = unquote(text, errors="replace")
        text = unicodedata.normalize(
            "NFKC", text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        )
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return text


def _assert_no_encoded_key(where: str, text: str, keys: list[str]) -> None:
    bare = re.sub(r"[^a-z0-9]", "", _undone(text).lower())
    for key in keys:
        assert re.sub(r"[^a-z0-9]", "", key.lower()) not in bare, where


def test_natural_re_encodings_and_splits_of_an_echoed_key_are_cut_everywhere(
    db: tuple[str, Engine],
    fake: FakeServerProcess,
    keys_env: dict[str, str],
    tmp_path: Path,
) -> None:
    """Issue 29 §4: the `echoencoded` server sends each key back percent-encoded, as HTML
    entities, in fullwidth letters, with a zero-width space between its characters, as `\\uXXXX`
    escapes (also escaped in the raw body), and split in two across adjacent columns (`model` |
    `system_fingerprint`, `model` | the reply text). Before, all of these were stored. Now, once
    the encodings are undone, no stored, exported, reported or printed text holds a key, nor does
    any two of a stored row's fields put side by side."""
    url, eng = db
    keys = list(keys_env.values())
    judges = [
        f"openai:enc-o!echoencoded?base_url={fake.url}/v1",
        f"openai:enc-p!echoencoded?base_url={fake.url}/v1&structured=off",
        f"anthropic:enc-a!echoencoded?base_url={fake.url}&structured=off",
    ]
    outputs = [
        cli(
            *create_argv("enc", *judges, protocol="pairwise", extra=("--pairs", PAIRS, "--limit", "2")),
            db=url,
        ),
        cli("campaign", "run", "enc", "--json", db=url),
        cli("query", "select * from response", "--format", "json", db=url),
    ]
    assert outputs[0].code == 0, outputs[0].stderr
    ran = json.loads(outputs[1].stdout)
    assert ran["calls"] == 12, ran
    planted = [r for r in fake.requests(limit=400) if r.get("fault") == "echoencoded"]
    assert len(planted) >= 12  # the server did send the keys back
    files: dict[str, str] = {}
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"attempts.{fmt}"
        r = cli("export", "enc", "--format", fmt, "--what", "attempts", "--out", str(out), db=url)
        assert r.code == 0, r.stderr
        outputs.append(r)
        files[out.name] = out.read_text(encoding="utf-8")
    out = tmp_path / "report.html"
    r = cli("report", "enc", "--out", str(out), "--bootstrap", "0", db=url)
    assert r.code == 0, r.stderr
    files[out.name] = out.read_text(encoding="utf-8")
    for name, text in files.items():
        _assert_no_encoded_key(name, text, keys)
    for i, r in enumerate(outputs):
        _assert_no_encoded_key(f"output {i}", r.stdout + r.stderr, keys)
    with eng.connect() as conn:
        rows = conn.execute(
            select(
                Response.text,
                Response.raw_body,
                Response.model_returned,
                Response.system_fingerprint,
                Response.finish_reason,
            )
        ).all()
    assert len(rows) == 12
    for row in rows:
        values = [v for v in row if v]
        for a in values:
            _assert_no_encoded_key("a stored field", a, keys)
            for b in values:
                if a is not b:
                    _assert_no_encoded_key("two stored fields side by side", a + b, keys)
    records = [json.loads(line) for line in files["attempts.jsonl"].splitlines() if line.strip()]
    for rec in records:
        values = [v for v in rec.values() if isinstance(v, str) and v]
        for a in values:
            for b in values:
                if a is not b:
                    _assert_no_encoded_key("two exported cells side by side", a + b, keys)
    _assert_no_encoded_key("database", _dump(url, eng).decode("utf-8", "replace"), keys)
