"""Simulated answers never pass for real models (issue 19 §4): every output resting on `sim:`
judges, a sim editor or the fake server says so — `simulated: true` in JSON, a badge in the
report, a word in CLI tables — and real campaigns are not labelled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judgepanel.demo import PAIRWISE, POINTWISE
from judgepanel.fake.server import FakeServerProcess
from tests.helpers import cli
from tests.runner.conftest import PAIRS, create_argv, tiny_db


def test_repair_outputs_on_sim_judges_say_simulated(demo_url: str) -> None:
    for args in (("status",), ("compare",), ("run",)):
        out = cli("repair", *args, "demo-repair", "--json", db=demo_url).json()
        assert out["simulated"] is True, args
    assert cli("repair", "list", "--json", db=demo_url).json()["iterations"][0]["simulated"] is True
    for args in (("status", "demo-repair"), ("compare", "demo-repair")):
        text = cli("repair", *args, db=demo_url).stdout
        assert text.splitlines()[0].startswith("SIMULATED"), args
    assert "(simulated)" in cli("repair", "list", db=demo_url).stdout


def test_metrics_and_status_on_sim_campaigns_say_simulated(demo_url: str) -> None:
    assert cli("metrics", "bias", "--campaign", PAIRWISE, "--json", db=demo_url).json()["simulated"] is True
    assert cli("metrics", "bias", "--campaign", PAIRWISE, db=demo_url).stdout.lstrip().startswith("SIMULATED")
    assert cli("campaign", "status", PAIRWISE, "--json", db=demo_url).json()["simulated"] is True
    assert "(SIMULATED)" in cli("campaign", "status", PAIRWISE, db=demo_url).stdout
    rows = cli("campaign", "list", "--json", db=demo_url).json()["campaigns"]
    assert rows and all(r["simulated"] for r in rows)
    cond = cli(
        "metrics", "conditions", "--campaign", POINTWISE, "--human-group", "expert",
        "--judge", "sim:judge-a?position_bias=0", "--bootstrap", "50", "--json", db=demo_url,
    )  # fmt: skip
    assert cond.json()["simulated"] is True


def test_report_on_an_iteration_alone_names_its_judges_and_has_the_badge(
    demo_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "it.html"
    r = cli("report", "--iteration", "demo-repair", "--out", str(out), "--json", db=demo_url).json()
    html = out.read_text(encoding="utf-8")
    assert r["simulated"] is True and 'data-simulated="true"' in html
    assert "0 campaigns" not in html
    assert "sim:judge-a?position_bias=0" in html and "sim:editor" in html
    md = tmp_path / "it.md"
    cli("report", "--iteration", "demo-repair", "--out", str(md), "--format", "md", db=demo_url)
    text = md.read_text(encoding="utf-8")
    assert "SIMULATED" in text and "0 campaigns" not in text and "sim:editor" in text


@pytest.fixture(scope="module")
def fake_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A pairwise campaign answered by the fake server under a real model's name, and one with
    the same judge never run."""
    url = f"sqlite:///{tmp_path_factory.mktemp('fake-sim') / 'f.db'}"
    eng = tiny_db(url, n_groups=2, per_group=3)
    eng.dispose()
    with FakeServerProcess("--seed", "3") as fake, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-judgepanel-test-OPENAI-9f8e7d6c5b4a3210")
        judge = f"openai:gpt-4o-mini?base_url={fake.url}/v1"
        assert (
            cli(*create_argv("faked", judge, protocol="pairwise", extra=("--pairs", PAIRS)), db=url).code == 0
        )
        assert cli("campaign", "run", "faked", "--json", db=url).code == 0
        assert (
            cli(
                *create_argv("unrun", "openai:gpt-4o", protocol="pairwise", extra=("--pairs", PAIRS)), db=url
            ).code
            == 0
        )
    return url


def test_a_campaign_answered_by_the_fake_server_is_labelled(fake_db: str, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = cli("report", "faked", "--out", str(out), "--bootstrap", "20", "--json", db=fake_db).json()
    html = out.read_text(encoding="utf-8")
    assert r["simulated"] is True and 'data-simulated="true"' in html
    assert re.search(r"faked: what ran <span class=\"badge sim\">simulated</span>", html)
    assert cli("metrics", "bias", "--campaign", "faked", "--json", db=fake_db).json()["simulated"] is True
    assert cli("campaign", "status", "faked", "--json", db=fake_db).json()["simulated"] is True


def test_a_campaign_without_simulated_answers_is_not_labelled(fake_db: str, tmp_path: Path) -> None:
    assert cli("campaign", "status", "unrun", "--json", db=fake_db).json()["simulated"] is False
    rows = {
        r["name"]: r["simulated"] for r in cli("campaign", "list", "--json", db=fake_db).json()["campaigns"]
    }
    assert rows == {"faked": True, "unrun": False}
    assert "SIMULATED" not in cli("campaign", "status", "unrun", db=fake_db).stdout
