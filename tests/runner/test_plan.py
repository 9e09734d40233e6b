"""Planning: deterministic job keys, the job grid, idempotent re-planning, --limit and --split."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import Engine, func, select

from judgepanel.errors import BadInput
from judgepanel.runner import campaign as api
from judgepanel.runner.plan import CampaignSpec, Unit, job_key, plan_jobs
from judgepanel.store.models import Pair
from tests.runner.conftest import DATASET, PAIRS, load_tiny


def test_job_key_is_sha256_of_canonical_json() -> None:
    desc = {"b": 1, "a": [1, "x"], "c": None}
    expected = hashlib.sha256(b'{"a":[1,"x"],"b":1,"c":null}').hexdigest()
    assert job_key(desc) == expected
    assert job_key(dict(reversed(list(desc.items())))) == expected


def test_grid_and_uniqueness() -> None:
    spec = CampaignSpec(
        name="c", dataset="d", protocol="pairwise", judges=("sim:a", "sim:b"), pairs="p", repeats=3
    )
    units = [Unit(None, i, (f"x{i}", f"y{i}")) for i in range(5)]
    jobs = plan_jobs(spec, units, dataset_key="d", rubric_hash=None)
    assert len(jobs) == 5 * 2 * 2 * 3
    assert len({j.key for j in jobs}) == len(jobs)
    assert {j.order for j in jobs} == {"AB", "BA"}
    # repeat-major: every unit is asked once before any second sample
    assert [j.repeat for j in jobs[:20]] == [0] * 20
    again = plan_jobs(spec, list(units), dataset_key="d", rubric_hash=None)
    assert [j.key for j in again] == [j.key for j in jobs]
    # the key names what is asked: any change of judge, unit, order, repeat or dataset changes it
    other = plan_jobs(spec, units[:1], dataset_key="other", rubric_hash=None)
    assert other[0].key != jobs[0].key


def test_pointwise_conditions_and_dimensions_are_in_the_key() -> None:
    spec = CampaignSpec(
        name="c",
        dataset="d",
        protocol="pointwise",
        judges=("sim:a",),
        rubric="r",
        conditions=("none", "criteria", "rubric"),
        dimensions=("coherence", "fluency"),
    )
    jobs = plan_jobs(spec, [Unit(1, None, ("i1",))], dataset_key="d", rubric_hash="h1")
    assert len(jobs) == 6 and len({j.key for j in jobs}) == 6
    # a rubric edit changes the jobs that show the rubric, not the no-rubric ones
    edited = plan_jobs(spec, [Unit(1, None, ("i1",))], dataset_key="d", rubric_hash="h2")
    changed = {(a.condition, a.key != b.key) for a, b in zip(jobs, edited, strict=True)}
    assert changed == {("none", False), ("criteria", True), ("rubric", True)}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"protocol": "pairwise"}, "needs --pairs"),
        ({"protocol": "pointwise", "conditions": ("rubric",)}, "needs --rubric"),
        ({"protocol": "clauses", "rubric": "r"}, "needs --dimension"),
        ({"protocol": "pointwise", "repeats": 0}, "--repeats"),
        ({"protocol": "pointwise", "judges": ("sim:a", "sim:a")}, "twice"),
        ({"protocol": "magic"}, "--protocol"),
    ],
)
def test_spec_validation(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"name": "c", "dataset": "d", "judges": ("sim:a",)}
    with pytest.raises(BadInput, match=message):
        CampaignSpec(**{**base, **kwargs}).validate()  # type: ignore[arg-type]


def test_create_is_idempotent_and_refuses_another_spec(engine: Engine) -> None:
    load_tiny(engine)
    info = api.create(
        engine, "c1", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a", "sim:b?noise=0.2"]
    )
    with engine.connect() as conn:
        n_pairs = conn.execute(select(func.count()).select_from(Pair)).scalar_one()
    assert n_pairs == 3 * 6  # three groups of four items: C(4, 2) within-group pairs each
    assert info.jobs == info.added == n_pairs * 2 * 2
    again = api.create(
        engine, "c1", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a", "sim:b?noise=0.2"]
    )
    assert (again.jobs, again.added) == (info.jobs, 0)
    with pytest.raises(BadInput, match="exists with another spec"):
        api.create(engine, "c1", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=["sim:a"])


def test_limit_and_split(engine: Engine) -> None:
    load_tiny(engine, n_groups=4, per_group=3)
    info = api.create(engine, "lim", dataset=DATASET, protocol="pointwise", judges=["sim:a"], limit=5)
    assert info.jobs == 5
    info = api.create(engine, "spl", dataset=DATASET, protocol="pointwise", judges=["sim:a"], split="test")
    assert info.jobs == 6  # groups 1 and 3, three items each
    info = api.create(
        engine, "rep", dataset=DATASET, protocol="pointwise", judges=["sim:a"], split="test", repeats=2
    )
    assert info.jobs == 12
    with pytest.raises(BadInput, match="nothing to judge"):
        api.create(engine, "none", dataset=DATASET, protocol="pointwise", judges=["sim:a"], split="dev")


def test_judge_spec_secrets_refused(engine: Engine) -> None:
    load_tiny(engine)
    with pytest.raises(BadInput, match="secret"):
        api.create(engine, "k", dataset=DATASET, protocol="pointwise", judges=["openai:gpt-4o?api_key=abc"])
