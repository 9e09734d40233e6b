"""Repair outputs name judges by their short names (issue 19 §3): `repair run` (its isolation
warning and comparison text), `repair status/compare --json` (`judge_names` beside `judges`), the
iteration report and the viewer's repair JSON. A judge may be given as `NAME=SPEC`; the names are
the ones the iteration's campaigns store."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cli
from tests.repair.conftest import prepare_db, run_args

PANEL = ("alpha=sim:judge-a", "sim:judge-b", "sim:judge-c")
SPECS = ["sim:judge-a", "sim:judge-b", "sim:judge-c"]
NAMES = ["alpha", "judge-b", "judge-c"]


def test_repair_outputs_show_short_names_with_the_spec_beside(sqlite_url: str, tmp_path: Path) -> None:
    db = sqlite_url
    prepare_db(db)
    run = cli(*run_args("n1", PANEL, "sim:editor"), db=db)
    assert run.code == 0, run.stderr
    # the isolation warning (stderr) and the comparison text name the judges
    assert "alpha (provider); judge-b (provider); judge-c (provider)" in run.stderr
    text = " ".join(run.stdout.split())
    assert "shares provider with alpha; provider with judge-b; provider with judge-c" in text
    assert "sim:judge" not in run.stderr and "with sim:judge" not in text

    status = cli("repair", "status", "n1", "--json", db=db).json()
    assert (status["judges"], status["judge_names"]) == (SPECS, NAMES)
    assert status["inputs"]["judges"] == list(PANEL)  # as given
    # the same names as the iteration's campaigns store
    listed = {c["name"]: c for c in cli("campaign", "list", "--json", db=db).json()["campaigns"]}
    for k in ("dev", "original", "contested", "control"):
        assert dict(zip(listed[f"n1-{k}"]["judges"], listed[f"n1-{k}"]["judge_names"], strict=True)) == dict(
            zip(SPECS, NAMES, strict=True)
        )

    cmp_ = cli("repair", "compare", "n1", "--json", db=db).json()
    assert (cmp_["judges"], cmp_["judge_names"]) == (SPECS, NAMES)
    assert cmp_["editor_shares_family_with"] == {s: ["provider"] for s in SPECS}  # keyed by spec, as before
    shown = " ".join(cli("repair", "compare", "n1", db=db).stdout.split())
    assert "shares provider with alpha;" in shown and "with sim:judge" not in shown

    out = tmp_path / "n1.md"
    made = cli("report", "--iteration", "n1", "--format", "md", "--out", str(out), db=db)
    assert made.code == 0, made.stderr
    md = out.read_text()
    assert "(judges alpha, judge-b, judge-c;" in md
    assert "Judges: `alpha` (`sim:judge-a`), `judge-b` (`sim:judge-b`), `judge-c` (`sim:judge-c`)" in md
    page_html = tmp_path / "n1.html"
    assert cli("report", "--iteration", "n1", "--out", str(page_html), db=db).code == 0
    body = page_html.read_text()
    assert "shares a provider or model family with alpha, judge-b, judge-c." in body
    assert "<code>alpha</code> (<code>sim:judge-a</code>)" in body

    from judgepanel.store.engine import make_engine
    from judgepanel.view.data import iteration

    engine = make_engine(db)
    try:
        page = iteration(engine, "n1")
    finally:
        engine.dispose()
    assert (page["judges"], page["judge_names"]) == (SPECS, NAMES)


def test_two_judges_with_one_name_are_refused_before_anything_is_written(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    r = cli(*run_args("n2", ("x=sim:judge-a", "x=sim:judge-b"), "sim:editor"), db=sqlite_url)
    assert r.code == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "judge name 'x'" in r.stderr
    assert cli("repair", "status", "n2", db=sqlite_url).code == 2


def test_derived_names_in_the_isolation_warning() -> None:
    """Without `NAME=`, the warning shows the derived names (`providers.spec.derive_judge_names`)."""
    from judgepanel.providers.spec import given_judge_names
    from judgepanel.repair.isolation import editor_shares_family_with, isolation_warning

    judges = [
        "openai:gpt-4o-mini?temperature=0",
        "openai:gpt-4o-mini?temperature=1",
        "anthropic:claude-haiku-4-5",
    ]
    shared = editor_shares_family_with("openai:gpt-4.1", judges)
    assert set(shared) == {"openai:gpt-4o-mini?temperature=0", "openai:gpt-4o-mini?temperature=1"}
    warning = isolation_warning(shared, given_judge_names(judges))
    assert warning == (
        "the editor shares a provider or model family with 2 judge(s): "
        "openai:gpt-4o-mini (temperature=0) (provider, model family); "
        "openai:gpt-4o-mini (temperature=1) (provider, model family)"
    )


def test_an_editor_given_as_name_equals_spec_is_refused_before_anything_is_written(
    sqlite_url: str,
) -> None:
    """`--editor NAME=SPEC` passed the checks (which read it as a judge), wrote the iteration, and
    failed at its rewrite step on "unknown provider 'ed=sim'", leaving a half-made iteration; an
    editor has no short name, so the name is refused up front, in one line, for every command that
    takes an editor."""
    import sqlite3

    from tests.align.conftest import run_args as align_args

    def dump() -> list[str]:  # every row of every table (the file's bytes move with a checkpoint)
        con = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
        try:
            return list(con.iterdump())
        finally:
            con.close()

    prepare_db(sqlite_url)
    before = dump()
    for argv in (
        run_args("n3", ("sim:judge-a", "sim:judge-b"), "ed=sim:editor"),
        align_args("a3", "instructions", "--editor", "ed=sim:editor"),
        ["rubric", "split", "summeval", "--editor", "ed=sim:editor"],
    ):
        r = cli(*argv, db=sqlite_url)
        assert r.code == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, (argv, r.stderr)
        assert "--editor takes a spec" in r.stderr and "'sim:editor'" in r.stderr, r.stderr
    assert dump() == before
    assert cli("repair", "status", "n3", db=sqlite_url).code == 2
