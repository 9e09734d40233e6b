"""Names people can read (issue 19 §3): `--judge "NAME=SPEC"`, `name:` in campaign files, derived
short names when none is given, unique per campaign, shown in every table, plot, report, viewer
page, export and JSON (`judge`/key = the name, `spec` = the full spec)."""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.errors import BadInput
from judgepanel.providers.spec import (
    check_judge_name,
    derive_judge_names,
    panel_names,
    split_judge_name,
    stored_judge_names,
)
from judgepanel.runner import campaign as api
from judgepanel.runner.options import RunOptions
from judgepanel.store.engine import make_engine
from judgepanel.store.matrices import pair_matrix
from judgepanel.store.migrate import upgrade
from judgepanel.store.models import Campaign
from tests.helpers import cli
from tests.runner.conftest import DATASET, PAIRS, load_tiny

FAIR = "sim:fair?noise=0.05"
LEAN = "sim:leaning?noise=0.05&position_bias=0.6"
LEAN_CANON = "sim:leaning?noise=0.05&position_bias=0.6"


# ---------------------------------------------------------------- the one source of names


def test_derived_names_tell_apart_judges_on_one_server() -> None:
    t0 = "openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1&temperature=0"
    t1 = "openai:gpt-4o-mini?base_url=http://127.0.0.1:8000/v1&temperature=1"
    assert derive_judge_names([t0, t1]) == {
        t0: "gpt-4o-mini (temperature=0)",
        t1: "gpt-4o-mini (temperature=1)",
    }
    # differing only in base_url: the server's address, without the scheme
    p1 = "openai:gpt-4o-mini?base_url=http://127.0.0.1:8001/v1"
    p2 = "openai:gpt-4o-mini?base_url=http://127.0.0.1:8002/v1"
    names = derive_judge_names([p1, p2])
    assert names == {
        p1: "gpt-4o-mini (base_url=127.0.0.1:8001/v1)",
        p2: "gpt-4o-mini (base_url=127.0.0.1:8002/v1)",
    }
    # one judge alone is its model; different providers keep the provider
    assert derive_judge_names(["openai:gpt-4o-mini"]) == {"openai:gpt-4o-mini": "gpt-4o-mini"}
    mixed = derive_judge_names(["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"])
    assert mixed == {
        "openai:gpt-4o-mini": "openai:gpt-4o-mini",
        "anthropic:claude-haiku-4-5": "anthropic:claude-haiku-4-5",
    }


def test_derived_names_never_show_key_like_parameters() -> None:
    a = "openai:m?base_url=http://h:1/v1&key_env=LOCAL_KEY_A"
    b = "openai:m?base_url=http://h:1/v1&key_env=LOCAL_KEY_B"
    names = derive_judge_names([a, b])
    assert not any("LOCAL_KEY" in n or "key_env" in n for n in names.values() if n not in (a, b))
    # nothing else tells them apart: they fall back to their specs (as stored, secret-free)
    assert names == {a: a, b: b}


def test_given_names_are_checked_and_unique() -> None:
    assert split_judge_name("mini=openai:gpt-4o-mini?temperature=0") == (
        "mini",
        "openai:gpt-4o-mini?temperature=0",
    )
    assert split_judge_name("openai:gpt-4o-mini?temperature=0") == (None, "openai:gpt-4o-mini?temperature=0")
    assert split_judge_name(" my judge = sim:a ") == ("my judge", "sim:a")
    for bad in ("sk-proj-abcdefghijklmnop1234", "", "a" * 61, "x<script>"):
        with pytest.raises(BadInput):
            check_judge_name(bad)
    with pytest.raises(BadInput, match="'mini' is given to two judges"):
        panel_names(["sim:a", "sim:b"], ["mini", "mini"])
    # a derived name that equals a name given to another judge yields to the full spec
    assert panel_names(["sim:a", "sim:b"], [None, "a"]) == ["sim:a", "a"]


def test_stored_names_win_and_old_campaigns_derive() -> None:
    spec = {"judges": ["sim:a", "sim:b"], "judge_names": ["alpha", "b"]}
    assert stored_judge_names(["sim:a", "sim:b"], spec) == {"sim:a": "alpha", "sim:b": "b"}
    assert stored_judge_names(["sim:a", "sim:b"], {"judges": ["sim:a", "sim:b"]}) == {
        "sim:a": "a",
        "sim:b": "b",
    }


# ---------------------------------------------------------------- end to end


@pytest.fixture
def named(engine: Engine) -> tuple[Engine, str]:
    load_tiny(engine, n_groups=4, per_group=4)
    api.create(
        engine, "named", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=[f"even={FAIR}", LEAN]
    )
    api.run(engine, "named", RunOptions(flush_ms=10))
    return engine, engine.url.render_as_string(hide_password=False)


def test_names_in_cli_json_and_tables(named: tuple[Engine, str]) -> None:
    engine, url = named
    with engine.connect() as conn:
        stored = conn.execute(select(Campaign.spec).where(Campaign.name == "named")).scalar_one()
    assert stored["judge_names"] == ["even", "leaning"]  # stored with the campaign
    assert "even=" not in json.dumps(stored["judges"]) and stored["judges"] == [FAIR, LEAN_CANON]

    bias = cli("metrics", "bias", "--campaign", "named", "--json", db=url).json()
    assert set(bias["judges"]) == {"even", "leaning"}
    assert bias["judges"]["even"]["spec"] == FAIR and bias["judges"]["leaning"]["spec"] == LEAN_CANON
    table = cli("metrics", "bias", "--campaign", "named", db=url).stdout
    assert "even" in table and "leaning" in table and "sim:fair" not in table

    status = cli("campaign", "status", "named", "--json", db=url).json()
    assert status["by_judge"][FAIR]["name"] == "even" and status["by_judge"][FAIR]["spec"] == FAIR
    text = cli("campaign", "status", "named", db=url).stdout
    assert "even" in text and "leaning" in text and "ope…" not in text

    listed = cli("campaign", "list", "--json", db=url).json()["campaigns"]
    assert listed[0]["judges"] == [FAIR, LEAN_CANON] and listed[0]["judge_names"] == ["even", "leaning"]
    assert "even, leaning" in cli("campaign", "list", db=url).stdout

    plan = cli("campaign", "plan", "named", "--json", db=url).json()
    assert plan["by_judge"][LEAN_CANON]["name"] == "leaning"
    assert "even" in cli("campaign", "plan", "named", db=url).stdout

    # rater columns carry the name; the spec form still selects them
    m = pair_matrix(engine, PAIRS, with_judges=["all"])
    assert {"even@named", "leaning@named"} <= set(m.rater_names)
    assert m.column(f"{FAIR}@named").tolist() == m.column("even@named").tolist()
    agree = cli(
        "metrics",
        "agreement",
        "--pairs",
        PAIRS,
        "--raters",
        "even@named,leaning@named",
        "--metric",
        "percent",
        "--json",
        db=url,
    )
    assert agree.code == 0, agree.stderr
    matrix = cli("metrics", "matrix", "--pairs", PAIRS, "--json", db=url)
    if matrix.code == 0:  # the tiny set has no humans; the judges alone may make a matrix
        assert "even@named" in matrix.json()["raters"]


def test_create_json_and_text_name_the_judges(engine: Engine) -> None:
    load_tiny(engine, n_groups=2, per_group=3)
    url = engine.url.render_as_string(hide_password=False)
    t0 = "sim:judge?temperature=0"
    t1 = "sim:judge?temperature=1"
    args = ("campaign", "create", "c", "--dataset", DATASET, "--protocol", "pairwise", "--pairs", PAIRS)
    r = cli(*args, "--judge", t0, "--judge", t1, "--json", db=url)
    assert r.code == 0, r.stderr
    assert r.json()["judge_names"] == ["judge (temperature=0)", "judge (temperature=1)"]


def test_duplicate_name_is_one_line_exit_2_and_writes_nothing(engine: Engine) -> None:
    load_tiny(engine, n_groups=2, per_group=3)
    url = engine.url.render_as_string(hide_password=False)
    args = ("campaign", "create", "dup", "--dataset", DATASET, "--protocol", "pairwise", "--pairs", PAIRS)
    r = cli(*args, "--judge", "x=sim:a", "--judge", "x=sim:b", db=url)
    assert r.code == 2 and len(r.stderr.strip().splitlines()) == 1 and "'x'" in r.stderr, r.stderr
    bad = cli(*args, "--judge", "sk-proj-abcdefghijklmnop1234=sim:a", db=url)
    assert bad.code == 2 and "abcdefghijklmnop" not in bad.stderr, bad.stderr
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Campaign)).scalar_one() == 0


def test_campaign_file_names_round_trip(engine: Engine, tmp_path: Path) -> None:
    load_tiny(engine, n_groups=2, per_group=3)
    url = engine.url.render_as_string(hide_password=False)
    path = tmp_path / "c.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: filed
            dataset: {DATASET}
            pairs: {PAIRS}
            protocol: pairwise
            judges:
              - "quick=sim:a"
              - name: careful one
                spec: "sim:b?noise=0.1"
              - "sim:c"
            """
        ),
        encoding="utf-8",
    )
    r = cli("campaign", "create", "--from", str(path), "--json", db=url)
    assert r.code == 0, r.stderr
    assert r.json()["judge_names"] == ["quick", "careful one", "c"]
    shown = cli("campaign", "show", "filed", "--yaml", db=url).stdout
    again = tmp_path / "again.yaml"
    again.write_text(shown.replace("name: filed", "name: filed2", 1), encoding="utf-8")
    r2 = cli("campaign", "create", "--from", str(again), "--json", db=url)
    assert r2.code == 0, r2.stderr
    assert r2.json()["judge_names"] == ["quick", "careful one", "c"]
    # a bad entry names the file and the line
    path.write_text(
        f"name: x\ndataset: {DATASET}\npairs: {PAIRS}\nprotocol: pairwise\njudges:\n  - name: a\n    model: sim:a\n",
        encoding="utf-8",
    )
    bad = cli("campaign", "create", "--from", str(path), db=url)
    assert bad.code == 2 and f"{path}:7" in bad.stderr, bad.stderr


def test_names_in_report_export_and_viewer(named: tuple[Engine, str], tmp_path: Path) -> None:
    engine, url = named
    html = tmp_path / "r.html"
    r = cli("report", "named", "--out", str(html), "--bootstrap", "20", db=url)
    assert r.code == 0, r.stderr
    page = html.read_text(encoding="utf-8")
    assert "<strong data-judge-name>even</strong>" in page and f"<code>{FAIR}</code>" in page
    bias_rows = page.split('data-section="bias"', 1)[-1] if 'data-section="bias"' in page else page
    assert "<td>even</td>" in bias_rows and "<td>leaning</td>" in bias_rows
    md = tmp_path / "r.md"
    assert cli("report", "named", "--format", "md", "--out", str(md), "--bootstrap", "20", db=url).code == 0
    assert "| even |" in md.read_text(encoding="utf-8")

    out = tmp_path / "v.csv"
    r = cli("export", "named", "--format", "csv", "--out", str(out), db=url)
    assert r.code == 0, r.stderr
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and {(row["judge"], row["judge_name"]) for row in rows} == {
        (FAIR, "even"),
        (LEAN_CANON, "leaning"),
    }

    from judgepanel.view import data

    camp = data.campaign(engine, "named", n_boot=20)
    assert camp["judge_names"] == {FAIR: "even", LEAN_CANON: "leaning"}
    assert (
        set(camp["bias"]["judges"]) == {"even", "leaning"} and camp["bias"]["judges"]["even"]["spec"] == FAIR
    )
    judges_in_matrix = [r for r in camp["matrix"]["raters"] if "sim:" in r or r in ("even", "leaning")]
    assert judges_in_matrix == ["even", "leaning"]  # the κ heatmap's judges by name, never by spec
    page_rows = data.verdicts(engine, "named", data.parse_verdict_query({}))["rows"]
    assert {r["judge_name"] for r in page_rows} == {"even", "leaning"}
    case = data.case(engine, "named", page_rows[0]["case"])
    assert {v["judge_name"] for v in case["verdicts"]} == {"even", "leaning"}

    # the pages people read
    from starlette.testclient import TestClient

    from judgepanel.view.app import create_app

    with TestClient(create_app(engine, n_boot=20), base_url="http://127.0.0.1:8765") as client:
        home = client.get("/").text
        assert ">even</span>" in home and ">leaning</span>" in home
        page = client.get("/campaigns/named").text
        assert "<strong data-judge-name>even</strong>" in page and "<td>even</td>" in page  # judges, bias
        table = client.get("/campaigns/named/verdicts").text
        assert f'<td title="{FAIR}">even</td>' in table and ">even</option>" in table
        one = client.get(f"/campaigns/named/cases/{page_rows[0]['case']}").text
        assert "<h3>even " in one or "<h3>leaning " in one


def test_renaming_on_recreate_keeps_the_jobs(engine: Engine) -> None:
    load_tiny(engine, n_groups=2, per_group=3)
    kw = {"dataset": DATASET, "protocol": "pairwise", "pairs": PAIRS}
    first = api.create(engine, "r", judges=["a=sim:a"], **kw)  # type: ignore[arg-type]
    again = api.create(engine, "r", judges=["b=sim:a"], **kw)  # type: ignore[arg-type]
    assert again.jobs == first.jobs and again.added == 0
    assert api.stored_spec(engine, "r")["judge_names"] == ["b"]


def test_names_survive_the_sqlite_file(sqlite_url: str) -> None:
    """The name is stored (not recomputed from whatever specs a later reader sees)."""
    eng = make_engine(sqlite_url)
    upgrade(eng)
    load_tiny(eng, n_groups=2, per_group=3)
    api.create(eng, "s", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["first=sim:a", "sim:b"])
    eng.dispose()
    listed = cli("campaign", "list", "--json", db=sqlite_url).json()["campaigns"]
    assert listed[0]["judge_names"] == ["first", "b"]
