"""Issue 17 §4: a `scoring=logprobs` judge's stored score is the expectation (e.g. 1.43); the
categorical metrics read its argmax verdict instead, the continuous ones the expectation, and each
command says which (`score_source`). A pointwise campaign against the fake server (real logprobs
on the OpenAI wire) with four humans; every figure is cross-checked against the verified metric
functions fed the argmax verdicts (or the expectations) read back by plain SQL."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy import Engine, select

from judgepanel.datasets.records import AnnotatorRecord, ItemRecord, LabelRecord, ParsedDataset
from judgepanel.fake.server import SAMPLE_WORDS, FakeServerProcess
from judgepanel.metrics.conditions import Comparisons, condition_study, rounded_mean
from judgepanel.metrics.validation import loo_rule
from judgepanel.providers.spec import parse_spec
from judgepanel.rubrics import bundled_rubric
from judgepanel.runner import campaign as api
from judgepanel.runner.options import RunOptions
from judgepanel.store.engine import make_engine
from judgepanel.store.imports import import_parsed
from judgepanel.store.models import Item, Job, Verdict
from judgepanel.store.rubrics import add_rubric
from tests.helpers import cli, migrate_db
from tests.runner.conftest import DATASET, FAKE_KEYS

DIM = "consistency"
HUMANS = ("h1", "h2", "h3", "h4")


def _items() -> list[ItemRecord]:
    """Six articles with five summaries each, from a noisy to an exact copy of a stretch of the
    article (the sim brain's quality q from about 0.5 to 1: scores over the whole scale)."""
    rng = random.Random(3)
    items = []
    for g in range(6):
        article = " ".join(rng.choice(SAMPLE_WORDS) for _ in range(80))
        words = article.split()
        for k in range(5):
            noise = (0.5, 0.3, 0.15, 0.05, 0.0)[k]
            start = rng.randrange(0, 40)
            out = [
                w if rng.random() >= noise else f"w{rng.randrange(999)}" for w in words[start : start + 30]
            ]
            items.append(
                ItemRecord(f"g{g}-s{k}", len(items), group_key=f"g{g}", input=article, output=" ".join(out))
            )
    return items


@pytest.fixture(scope="module")
def db(sqlite_url_module: str, fake: FakeServerProcess) -> Iterator[tuple[str, Engine, str]]:
    migrate_db(sqlite_url_module)
    engine = make_engine(sqlite_url_module)
    items = _items()
    rng = random.Random(5)
    labels = []
    for it in items:
        faithful = int(it.external_id.rsplit("s", 1)[1]) / 4
        for h in HUMANS:
            score = min(5, max(1, round(1 + 4 * faithful + rng.gauss(0, 0.9))))
            labels.append(LabelRecord(it.external_id, h, DIM, float(score), str(score)))
    parsed = ParsedDataset(
        kind="items",
        source_hash="logprob-metrics",
        items=items,
        annotators=[AnnotatorRecord(h, "human", "expert") for h in HUMANS],
        labels=labels,
    )
    import_parsed(engine, DATASET, parsed)
    rubric = add_rubric(engine, bundled_rubric("summeval")).rubric.ref
    judge = f"openai:lp?base_url={fake.url}/v1&scoring=logprobs&top_logprobs=5"
    with pytest.MonkeyPatch.context() as mp:
        for k, v in FAKE_KEYS.items():
            mp.setenv(k, v)
        api.create(
            engine,
            "lp",
            dataset=DATASET,
            protocol="pointwise",
            judges=[judge],
            rubric=rubric,
            dimensions=(DIM,),
        )
        api.run(engine, "lp", RunOptions(flush_ms=10, concurrency=8))
    yield sqlite_url_module, engine, parse_spec(judge).name
    engine.dispose()


@pytest.fixture(scope="module")
def sqlite_url_module(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('lpm') / 'judgepanel.db'}"


def _verdicts(engine: Engine) -> dict[str, tuple[float, float]]:
    """item external id -> (argmax, stored score) of the campaign's accepted verdicts."""
    with engine.connect() as c:
        rows = c.execute(
            select(Item.external_id, Verdict.value_canonical, Verdict.score)
            .join(Job, Job.item_id == Item.id)
            .join(Verdict, Verdict.job_id == Job.id)
            .where(Verdict.parse_status == "ok")
        ).all()
    return {e: (float(v), float(s)) for e, v, s in rows}


def _humans(engine: Engine) -> dict[str, dict[str, float]]:
    with engine.connect() as c:
        rows = c.exec_driver_sql(
            "select i.external_id, a.name, l.value_num from label l join annotator a on a.id = l.annotator_id "
            "join item i on i.id = l.item_id"
        ).all()
    out: dict[str, dict[str, float]] = {}
    for e, name, v in rows:
        out.setdefault(e, {})[name] = float(v)
    return out


def test_the_stored_scores_are_continuous(db: tuple[str, Engine, str]) -> None:
    _, engine, _ = db
    v = _verdicts(engine)
    assert len(v) == 30
    assert any(not s.is_integer() for _, s in v.values())  # the premise: expectations are stored
    assert len({a for a, _ in v.values()}) >= 3  # and the argmax verdicts use the scale


def test_metrics_conditions_reads_the_argmax(db: tuple[str, Engine, str]) -> None:
    url, engine, _ = db
    got = cli(
        "metrics",
        "conditions",
        "--campaign",
        "lp",
        "--human-group",
        "expert",
        "--bootstrap",
        "50",
        "--json",
        db=url,
    )
    assert got.code == 0, got.stderr  # was exit 2: "score 1.42807 is not on the 1..5 scale"
    out = got.json()
    assert out["score_source"] == "argmax"
    v, h = _verdicts(engine), _humans(engine)
    ids = sorted(v)
    ref = condition_study(
        {
            "none": Comparisons.of(
                [v[i][0] for i in ids], [rounded_mean(list(h[i].values())) for i in ids], range(len(ids))
            )
        },
        categories=np.arange(1.0, 6.0),
        n_boot=50,
    )
    for stat in ("exact", "kappa", "qwk", "spearman"):
        assert out["conditions"]["none"][stat]["value"] == pytest.approx(
            getattr(ref.conditions["none"], stat).value, abs=1e-12, nan_ok=True
        ), stat


def test_validate_loo_compares_the_argmax_with_the_humans(db: tuple[str, Engine, str]) -> None:
    url, engine, judge = db
    got = cli("validate", "loo", "--campaign", "lp", "--judge", judge, "--json", db=url)
    assert got.code == 0, got.stderr
    out = got.json()
    assert out["score_source"] == "argmax"
    v, h = _verdicts(engine), _humans(engine)
    ids = sorted(v, key=lambda e: (int(e[1 : e.index("-")]), int(e.rsplit("s", 1)[1])))
    humans = np.array([[h[i][n] for n in HUMANS] for i in ids])
    ref = loo_rule(humans, np.array([v[i][0] for i in ids]), names=HUMANS)
    for name in HUMANS:
        assert out["humans"][name]["d"] == pytest.approx(ref.as_dict()["humans"][name]["d"], abs=1e-12)
    assert out["accepted"] == ref.accepted and out["omega"] == pytest.approx(ref.omega, abs=1e-12)


@pytest.mark.parametrize(("scorer", "source"), [("accuracy", "argmax"), ("neg-rmse", "expectation")])
def test_alt_test_says_which_score_it_read(db: tuple[str, Engine, str], scorer: str, source: str) -> None:
    url, _, judge = db
    got = cli(
        "validate", "alt-test", "--campaign", "lp", "--judge", judge, "--epsilon", "0.2",
        "--scorer", scorer, "--min-instances", "5", "--json", db=url,
    )  # fmt: skip
    assert got.code == 0, got.stderr
    assert got.json()["score_source"] == source


def test_prevalence_thresholds_the_expectation(db: tuple[str, Engine, str]) -> None:
    url, engine, _ = db
    got = cli(
        "metrics", "prevalence", "--campaign", "lp", "--human-group", "expert", "--threshold", "3",
        "--bootstrap", "50", "--json", db=url,
    )  # fmt: skip
    assert got.code == 0, got.stderr
    out = got.json()
    assert out["score_source"] == "expectation"
    scores = [s for _, s in _verdicts(engine).values()]
    assert out["raw_rate"] == pytest.approx(sum(s >= 3 for s in scores) / len(scores), abs=1e-12)
