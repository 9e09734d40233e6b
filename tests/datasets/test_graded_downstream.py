"""What works for judgepanel's own campaigns works for imported graders: an Inspect log and a
promptfoo results file graded the bundled SummEval sample's summaries (fake server), attached to
the sample's dataset `se` with its 3 experts and 5 crowd workers (`--dataset se`).

Cross-checks: the imported grader's agreement with the experts against `krippendorff` on the
stored values; `validate alt-test|loo` on the imported campaign against the same grades imported
as an llm annotator of the dataset (the path validate had before, `import-labels`): the same
figures. Pages: the report and the viewer (in headless Chromium) name the source.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.datasets.promptfoo_runs import FIXTURE
from tests.datasets.test_inspect_import import BIG, MINI, _rows
from tests.helpers import cli, from_built, load_summeval_sample
from tests.view.conftest import Viewer

COH = "llm-rubric/coherence (openai:chat:grader-mini)"
GRADES = """
select i.external_id, v.score from verdict v join job j on j.id = v.job_id join item i on i.id = j.item_id
join campaign c on c.id = j.campaign_id join judge jd on jd.id = j.judge_id
where c.name = :campaign and j.repeat = 0 and jd.name = :judge
"""


def _spec_of(db: str, campaign: str, short: str) -> str:
    (spec,) = _rows(db, "select spec from campaign where name = :c", c=campaign)[0]
    spec = spec if isinstance(spec, dict) else json.loads(spec)
    return dict(zip(spec["judge_names"], spec["judges"], strict=True))[short]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, inspect_logs: dict[str, Path]) -> str:
    """Built once per test run (`from_built`) whichever xdist worker asks first (it took 13-15 s
    on each worker that ran a test of this module); each module gets a copy."""
    db = f"sqlite:///{tmp_path_factory.mktemp('graded') / 'graded.db'}"
    from_built(db, "graded-downstream", lambda url: _build_graded(url, inspect_logs))
    return db


def _build_graded(db: str, inspect_logs: dict[str, Path]) -> None:
    load_summeval_sample(db, articles=False)
    for args in (
        ("data", "import-inspect", str(inspect_logs["graded"]), "--name", "insp", "--dataset", "se", "--dimension", "coherence"),
        ("data", "import-promptfoo", str(FIXTURE), "--name", "pfoo", "--dataset", "se"),
    ):  # fmt: skip
        r = cli(*args, db=db)
        assert r.code == 0, r.stderr
    # the same grades of the Inspect grader, as an llm annotator of `se` (validate's older path:
    # an alt-test panel's LLM annotations attached to the dataset's items)
    panel = Path(db.removeprefix("sqlite:///")).parent / "panel"
    panel.mkdir(exist_ok=True)  # a build that failed half-way may have left it
    llms = {}
    for llm, judge in (("mini-llm", MINI), ("big-llm", BIG)):  # BIG's C/P/I as the numbers 2/1/0
        rows = _rows(db, GRADES, campaign="insp", judge=_spec_of(db, "insp", judge))
        llms[llm] = {ext.replace("/", "__") + "__coherence": score for ext, score in rows}
    (panel / "llm_annotations.json").write_text(json.dumps(llms))
    r = cli("data", "import-alttest", str(panel), "--into", "se", db=db)
    assert r.code == 0, r.stderr


def test_agreement_with_the_experts_reads_the_imported_grades(graded: str) -> None:
    import krippendorff

    col = f"{MINI}@insp"
    out = cli(
        "metrics", "agreement", "--dataset", "se", "--dimension", "coherence", "--metric", "alpha",
        "--level", "interval", "--raters", f"expert_1,expert_2,expert_3,{col}", "--json", db=graded,
    ).json()  # fmt: skip
    grades = dict(_rows(graded, GRADES, campaign="insp", judge=_spec_of(graded, "insp", MINI)))
    experts = {
        (ext, name): v
        for ext, name, v in _rows(
            graded,
            "select i.external_id, a.name, l.value_num from label l join annotator a on a.id = l.annotator_id "
            "join item i on i.id = l.item_id where l.dimension = 'coherence' and a.name like 'expert_%'",
        )
    }
    items = sorted({ext for ext, _ in experts} | set(grades))
    matrix = np.array(
        [[experts.get((ext, f"expert_{k}"), np.nan) for ext in items] for k in (1, 2, 3)]
        + [[grades.get(ext, np.nan) for ext in items]]
    )
    want = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert out["value"] == pytest.approx(want, abs=1e-9)
    assert out["n_raters"] == 4


@pytest.mark.parametrize(
    ("command", "judge", "llm"),
    [
        ("alt-test", MINI, "mini-llm"),
        ("loo", MINI, "mini-llm"),
        ("alt-test", BIG, "big-llm"),
        ("loo", BIG, "big-llm"),
    ],
)
def test_validate_on_the_imported_campaign_equals_validate_on_the_same_labels(
    graded: str, command: str, judge: str, llm: str
) -> None:
    """BIG's verdicts are presented as C/P/I: validate reads them as their mapped numbers."""
    extra = (
        ["--epsilon", "0.2", "--scorer", "neg-rmse"] if command == "alt-test" else ["--agreement", "alpha"]
    )
    if command == "loo":
        extra += ["--level", "interval"]
    on_campaign = cli(
        "validate", command, "--campaign", "insp", "--judge", judge, "--dimension", "coherence", *extra, "--json",
        db=graded,
    ).json()  # fmt: skip
    on_labels = cli(
        "validate", command, "--dataset", "se", "--judge", llm, "--dimension", "coherence", *extra, "--json",
        db=graded,
    ).json()  # fmt: skip
    assert set(on_campaign["humans"]) == {f"expert_{k}" for k in (1, 2, 3)} | {
        f"turker_{k}" for k in range(1, 6)
    }
    for key in ("omega", "humans"):
        assert on_campaign[key] == on_labels[key], key


def test_rank_reads_both_imported_graders(graded: str) -> None:
    out = cli(
        "validate", "rank", "--campaign", "insp", "--dimension", "coherence", "--scorer", "neg-rmse", "--json",
        db=graded,
    ).json()  # fmt: skip
    assert set(json.dumps(out).split('"')) >= {MINI, BIG}


def test_promptfoo_grader_validates_too(graded: str) -> None:
    out = cli(
        "validate", "alt-test", "--campaign", "pfoo", "--judge", COH, "--dimension", "coherence",
        "--epsilon", "0.2", "--scorer", "neg-rmse", "--min-instances", "5", "--json", db=graded,
    ).json()  # fmt: skip
    assert "omega" in out and set(out["humans"]) >= {"expert_1", "expert_2", "expert_3"}


def test_position_bias_says_why_there_is_none(graded: str) -> None:
    r = cli("metrics", "bias", "--campaign", "insp", db=graded)
    assert r.code == 2 and "position bias needs a pairwise campaign" in r.stderr and r.stderr.count("\n") == 1


def test_report_names_the_source(graded: str, tmp_path: Path, inspect_logs: dict[str, Path]) -> None:
    out = tmp_path / "insp.html"
    r = cli("report", "insp", "--out", str(out), db=graded)
    assert r.code == 0, r.stderr
    html = out.read_text(encoding="utf-8")
    assert f"inspect: log {inspect_logs['graded']} (task summeval_graders" in html
    assert MINI in html and BIG in html
    md = tmp_path / "pfoo.md"
    assert cli("report", "pfoo", "--format", "md", "--out", str(md), db=graded).code == 0
    assert f"| graded by | promptfoo: results {FIXTURE} (eval id eval-" in md.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def viewer(graded: str) -> Iterator[Viewer]:
    v = Viewer(graded)
    yield v
    v.stop()


def test_viewer_names_the_source_on_every_page_with_those_verdicts(viewer: Viewer, chromium: object) -> None:
    import urllib.request

    from selenium.webdriver.common.by import By

    with urllib.request.urlopen(viewer.url + "/api/campaigns/insp") as f:
        api = json.load(f)
    assert api["source"].startswith("inspect: log ") and api["simulated"] is True
    with urllib.request.urlopen(viewer.url + "/api/campaigns/insp/verdicts") as f:
        rows = json.load(f)
    case, rid = rows["rows"][0]["case"], None
    with urllib.request.urlopen(f"{viewer.url}/api/campaigns/insp/cases/{case}") as f:
        rid = json.load(f)["verdicts"][0]["request_id"]
    driver = chromium
    for page in (
        "/campaigns/insp",
        "/campaigns/insp/verdicts",
        f"/campaigns/insp/cases/{case}",
        f"/campaigns/insp/requests/{rid}",
    ):
        driver.get(viewer.url + page)  # type: ignore[attr-defined]
        banner = driver.find_element(By.CSS_SELECTOR, ".source-banner")  # type: ignore[attr-defined]
        assert banner.is_displayed() and "graded by another tool: inspect: log" in banner.text, page
    driver.get(viewer.url + "/campaigns/pfoo")  # type: ignore[attr-defined]
    assert "promptfoo: results" in driver.find_element(By.CSS_SELECTOR, ".source-banner").text  # type: ignore[attr-defined]
