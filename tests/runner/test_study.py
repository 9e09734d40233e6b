"""The study engine (`runner/study.py`) on its own: steps run in their order, a recorded step is
skipped on resume, a step that fails stops the study and the next run resumes at it, `stopped`
ends it, `retry_failed` re-opens what a step's rule says, and a campaign stopped at its
`--max-cost` stops its step between steps and resumes under a larger cap without buying again.

The order and resume tests keep the record in a dict (the engine reads records only through
`load` / `reopen`); the budget test runs real campaigns of simulated judges through the runner on
a real SQLite file. The ported studies (repair, alignment) are tested end to end in tests/repair
and tests/align, kill-and-resume included."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest
from sqlalchemy import Engine, create_engine, text

from judgepanel.errors import BadInput
from judgepanel.runner.study import (
    Step,
    Study,
    StudyContext,
    StudyIncomplete,
    StudyKind,
    check_budget,
    run_campaign,
)


@dataclass(frozen=True)
class Rec:
    name: str
    steps: Mapping[str, str]


@dataclass
class Book:
    """An in-memory record store: step states, and every step run, in order."""

    states: dict[str, str]
    ran: list[str] = field(default_factory=list)
    fail: set[str] = field(default_factory=set)

    def load(self, _engine: Engine, name: str) -> Rec:
        return Rec(name, dict(self.states))

    def reopen(self, _engine: Engine, name: str, steps: Sequence[str]) -> Rec:
        self.states.update(dict.fromkeys(steps, "pending"))
        return self.load(_engine, name)

    def step(self, label: str) -> Step[Rec]:
        def run(_ctx: StudyContext, _name: str) -> None:
            self.ran.append(label)
            if label in self.fail:
                raise StudyIncomplete(f"{label} failed")
            self.states[label] = "done"

        return Step(label, run)


NAMES = ("dev", "choose", "evaluate", "compare")


def _study(book: Book, stopped_reason: Callable[[Rec], str | None] | None = None) -> Study[Rec]:
    return Study(
        steps=tuple(book.step(n) for n in NAMES),
        load=book.load,
        reopen=book.reopen,
        stopped_reason=stopped_reason,
    )


def _ctx(said: list[str] | None = None, *, retry_failed: bool = False) -> StudyContext:
    from judgepanel.runner.options import RunOptions

    engine = create_engine("sqlite://")  # never touched by these steps
    return StudyContext(
        engine, RunOptions(), say=(said.append if said is not None else print), retry_failed=retry_failed
    )


def test_steps_run_once_each_in_their_order() -> None:
    book = Book(dict.fromkeys(NAMES, "pending"))
    said: list[str] = []
    rec = _study(book).run(_ctx(said), "s")
    assert book.ran == list(NAMES)
    assert dict(rec.steps) == dict.fromkeys(NAMES, "done")
    assert said == [f"step {n}" for n in NAMES]
    # everything recorded: running again runs nothing
    _study(book).run(_ctx(), "s")
    assert book.ran == list(NAMES)


def test_resume_skips_recorded_steps_and_stop_after_stops_there() -> None:
    book = Book({"dev": "done", "choose": "pending", "evaluate": "pending", "compare": "pending"})
    rec = _study(book).run(_ctx(), "s", stop_after="choose")
    assert book.ran == ["choose"]
    assert dict(rec.steps) == {"dev": "done", "choose": "done", "evaluate": "pending", "compare": "pending"}
    # stop_after a step already done runs nothing at all
    _study(book).run(_ctx(), "s", stop_after="dev")
    assert book.ran == ["choose"]
    assert _study(book).next_step(book.load(create_engine("sqlite://"), "s")) == "evaluate"


def test_a_failed_step_stops_the_study_and_the_next_run_resumes_at_it() -> None:
    book = Book(dict.fromkeys(NAMES, "pending"), fail={"evaluate"})
    with pytest.raises(StudyIncomplete, match="evaluate failed"):
        _study(book).run(_ctx(), "s")
    assert book.ran == ["dev", "choose", "evaluate"]  # compare never started
    assert book.states == {"dev": "done", "choose": "done", "evaluate": "pending", "compare": "pending"}
    book.fail.clear()
    rec = _study(book).run(_ctx(), "s")
    assert book.ran == ["dev", "choose", "evaluate", "evaluate", "compare"]
    assert dict(rec.steps) == dict.fromkeys(NAMES, "done")


def test_a_stopped_study_runs_no_further_step_and_says_why() -> None:
    book = Book({"dev": "done", "choose": "stopped", "evaluate": "stopped", "compare": "stopped"})
    said: list[str] = []
    study = _study(book, stopped_reason=lambda r: f"{r.name}: nothing left to repair")
    rec = study.run(_ctx(said), "s")
    assert book.ran == [] and said == ["stopped: s: nothing left to repair"]
    assert rec.steps["choose"] == "stopped"


def test_retry_failed_reopens_the_done_steps_its_rules_name_and_runs_them_again() -> None:
    book = Book(dict.fromkeys(NAMES, "done"))
    asked: list[tuple[str, bool]] = []

    def rule(name: str) -> Callable[[StudyContext, Rec], bool]:
        def reopen(ctx: StudyContext, rec: Rec) -> bool:
            asked.append((name, ctx.retry_failed))
            return name in ("evaluate", "compare")

        return reopen

    steps = tuple(Step(s.name, s.run, rule(s.name)) for s in (book.step(n) for n in NAMES))
    study = Study(steps=steps, load=book.load, reopen=book.reopen)
    study.run(_ctx(), "s")  # without retry_failed no rule is asked
    assert asked == [] and book.ran == []
    study.run(_ctx(retry_failed=True), "s")
    assert [n for n, _r in asked] == list(NAMES) and all(r for _n, r in asked)
    assert book.ran == ["evaluate", "compare"]


def test_bad_stop_after_and_bad_studies_are_refused() -> None:
    book = Book(dict.fromkeys(NAMES, "pending"))
    with pytest.raises(
        BadInput, match=r"--stop-after must be one of dev, choose, evaluate, compare, got 'x'"
    ):
        _study(book).run(_ctx(), "s", stop_after="x")
    assert book.ran == []
    with pytest.raises(ValueError, match="unique"):
        Study(steps=(book.step("a"), book.step("a")), load=book.load)
    with pytest.raises(ValueError, match="reopen writer"):
        Study(steps=(Step("a", book.step("a").run, lambda _c, _r: True),), load=book.load)


def test_a_step_run_on_its_own_is_refused_until_the_steps_it_reads_are_done() -> None:
    rec = Rec("it1", {"dev": "done", "select": "stopped", "rewrite": "pending"})
    kind = StudyKind("iteration", "repair")
    kind.need(rec, "dev")
    for step in ("select", "rewrite"):
        with pytest.raises(BadInput) as e:
            kind.need(rec, "dev", step)
        assert str(e.value) == (
            f"iteration 'it1': step {step!r} is not done yet (run `judgepanel repair run it1`)"
        )


# ---------------------------------------------------------------- the budget stop, real campaigns


PRICED = "sim:judge-a?price_in=1000&price_out=1000"


def test_unknown_prices_are_refused_before_anything_runs() -> None:
    from judgepanel.runner.options import RunOptions

    with pytest.raises(BadInput, match="price"):
        check_budget(RunOptions(max_cost=1.0), ["openai:no-such-model?base_url=http://127.0.0.1:9/v1"])
    check_budget(RunOptions(), ["openai:no-such-model?base_url=http://127.0.0.1:9/v1"])  # no cap: no check
    check_budget(RunOptions(max_cost=1.0), [PRICED])


def test_a_campaign_at_its_cap_stops_the_study_between_steps_and_resumes_without_rebuying(
    sqlite_url: str,
) -> None:
    from judgepanel.runner import create
    from judgepanel.runner.options import RunOptions
    from judgepanel.store.engine import make_engine
    from tests.repair.conftest import prepare_db

    prepare_db(sqlite_url)
    engine = make_engine(sqlite_url)
    book = Book({"first": "pending", "second": "pending"})

    def step(label: str, split: str) -> Step[Rec]:
        def run(ctx: StudyContext, name: str) -> None:
            camp = f"{name}-{label}"
            create(
                ctx.engine,
                camp,
                dataset="se",
                protocol="pointwise",
                judges=[PRICED],
                dimensions=("coherence",),
                split=split,
                limit=4,
            )
            book.ran.append(label)
            run_campaign(ctx, camp)
            book.states[label] = "done"

        return Step(label, run)

    study = Study(steps=(step("first", "dev"), step("second", "eval")), load=book.load)

    def ctx(cap: float) -> StudyContext:
        return StudyKind("test study", "study-test").context(engine, RunOptions(max_cost=cap))

    def calls() -> dict[str, int]:
        with engine.connect() as c:
            rows = c.execute(
                text(
                    "SELECT c.name, count(r.id) FROM campaign c JOIN job j ON j.campaign_id = c.id "
                    "LEFT JOIN request r ON r.job_id = j.id GROUP BY c.name"
                )
            ).all()
        return {str(n): int(k) for n, k in rows}

    with pytest.raises(
        StudyIncomplete, match=r"at its cap of .*run the same study-test command with a larger --max-cost"
    ):
        study.run(ctx(1e-6), "b")
    # the first step stopped at the cap: not recorded, the second never planned
    assert book.states == {"first": "pending", "second": "pending"} and book.ran == ["first"]
    before = calls()
    assert set(before) == {"b-first"}
    assert before["b-first"] < 4  # the cap stopped it before all four jobs were asked
    # the same cap again: the study stops at the same step and buys nothing more
    with pytest.raises(StudyIncomplete):
        study.run(ctx(1e-6), "b")
    assert calls() == before
    rec = study.run(ctx(100.0), "b")
    assert dict(rec.steps) == {"first": "done", "second": "done"}
    after = calls()
    assert after == {"b-first": 4, "b-second": 4}
    study.run(ctx(100.0), "b")  # all recorded: nothing run, nothing bought
    assert calls() == after and book.ran == ["first", "first", "first", "second"]
    engine.dispose()
