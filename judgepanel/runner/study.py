"""A study: a stored, resumable sequence of named steps, each running its campaigns through the
runner and recording its result (rubric repair, judge alignment, and the studies to come).

Boundary: this module owns the order of the steps, when a step is skipped, re-opened or where the
study stops, running a step's campaign to the end, and the price check `--max-cost` needs. What a
step computes and what it records belong to the study that defines it (`repair/`, `align/`); the
step states in the study's row are written by `store/study.py`.

    study = Study(steps=(Step("dev", dev), Step("select", select), …), load=get_iteration)
    record = study.run(StudyContext(engine, options, say=…), "it1", stop_after="select")

Resume rule. A step runs its campaigns (created with deterministic job keys, so created again they
are the same jobs) and then records what it produced together with its state `done`, in one
transaction. A step whose state is `done` is skipped. A step that raises — an interruption, even
SIGKILL, a campaign that ended with jobs pending, a failed editor call — records nothing: its state
stays `pending`, the study stops there, and the same command resumes at that step, asking only
what is not done (exactly-once is the runner's). `stopped` (a rule of the study fired, such as a
repair chain's stopping rule) ends the study at that step for good. With `retry_failed`, a done
step whose `reopen` rule says so is marked pending again before the first step runs.

Budget. `--max-cost` is each campaign's total across runs (issue 17). Before anything is written
every model's price must be known (`check_budget`); a campaign that stops at its cap stops its
step (`StudyIncomplete`, exit 3), so the study stops between steps, never with half a record,
and resumes there under a larger cap without buying again what it has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from judgepanel.errors import BadInput, JudgepanelError
from judgepanel.metrics.names import RESAMPLE_MODES

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from judgepanel.runner.executor import ProviderFactory, RunSummary
    from judgepanel.runner.options import RunOptions

__all__ = [
    "Step",
    "Study",
    "StudyContext",
    "StudyIncomplete",
    "StudyKind",
    "StudyRecord",
    "check_budget",
    "run_campaign",
    "say_nothing",
]


class StudyIncomplete(JudgepanelError):
    """A step's campaign did not finish (budget, interruption) or a call it needs failed: the step
    is not recorded; the same command resumes it."""

    exit_code = 3


class StudyRecord(Protocol):
    """What the engine reads of a study's record: its name and each step's state."""

    @property
    def name(self) -> str: ...

    @property
    def steps(self) -> Mapping[str, str]: ...


R = TypeVar("R", bound=StudyRecord)


def check_resample(mode: str | None) -> None:
    """`--resample` of a study: None (its default) or one of `RESAMPLE_MODES`."""
    if mode is not None and mode not in RESAMPLE_MODES:
        raise BadInput(f"--resample must be one of {', '.join(RESAMPLE_MODES)}, got {mode!r}")


def check_sampling(limit: int | None, n_boot: int, resample: str | None) -> None:
    """The sampling inputs every stored study takes: `--limit`, `--bootstrap`, `--resample`."""
    if limit is not None and limit < 1:
        raise BadInput(f"--limit must be at least 1, got {limit}")
    if n_boot < 100:
        raise BadInput(f"--bootstrap must be at least 100, got {n_boot}")
    check_resample(resample)


def say_nothing(_m: str) -> None:
    return None


@dataclass(frozen=True)
class StudyKind:
    """A kind of study as its messages name it: `noun` ("iteration", "alignment"), the `command`
    whose `run NAME` resumes one ("repair", "align"), and its own `StudyIncomplete`."""

    noun: str
    command: str
    incomplete: type[StudyIncomplete] = StudyIncomplete

    def context(
        self,
        engine: Engine,
        options: RunOptions,
        factory: ProviderFactory | None = None,
        say: Callable[[str], None] = say_nothing,
        retry_failed: bool = False,
    ) -> StudyContext:
        return StudyContext(engine, options, factory, say, retry_failed, self)

    def need(self, rec: StudyRecord, *steps: str) -> None:
        """Refuse a step run on its own (`repair evaluate NAME`, …) before the steps it reads are
        done, saying how to run them."""
        for s in steps:
            if rec.steps.get(s) != "done":
                raise BadInput(
                    f"{self.noun} {rec.name!r}: step {s!r} is not done yet "
                    f"(run `judgepanel {self.command} run {rec.name}`)"
                )


@dataclass(frozen=True)
class StudyContext:
    """What every step of a run shares: the database, the run options, the provider factory (the
    tests' fake servers), where progress lines go, and the kind of study (how the user resumes
    it, in messages; the exception that leaves a step pending)."""

    engine: Engine
    options: RunOptions
    factory: ProviderFactory | None = None
    say: Callable[[str], None] = field(default=say_nothing)
    # re-ask the failed calls of the campaigns this run's steps drive (unreadable, truncated, out
    # of retries, refused): the user asks again on purpose
    retry_failed: bool = False
    kind: StudyKind = StudyKind("study", "study")


def check_budget(options: RunOptions | None, specs: Sequence[str]) -> None:
    """`--max-cost` needs every model's price; refused before anything is written or called."""
    if options is not None and options.max_cost is not None:
        from judgepanel.providers.spec import parse_spec, split_judge_name
        from judgepanel.runner.budget import check_prices, price_for

        parsed = [parse_spec(split_judge_name(j)[1]) for j in specs]
        check_prices(options.max_cost, {js.name: price_for(js) for js in parsed})


def run_campaign(ctx: StudyContext, campaign: str) -> RunSummary:
    """Run the campaign until no job is pending, or raise the study's `StudyIncomplete`. Failed jobs do not
    raise here: each study decides what they mean for its step."""
    from judgepanel.runner.campaign import run

    summary = run(
        ctx.engine,
        campaign,
        ctx.options,
        provider_factory=ctx.factory,
        reask_parse_failures=ctx.retry_failed,
        # an editor reply cut at its output cap (class `truncated`), re-asked only on purpose
        reask_truncated=ctx.retry_failed,
        reask_fatal=ctx.retry_failed,  # a refusal, re-asked after the user changed what caused it
    )
    ctx.say(
        f"campaign {campaign}: {summary.done}/{summary.jobs} done, {summary.calls} calls, {summary.cached} cached"
    )
    if summary.pending:
        if summary.status == "budget":
            # the cap is the campaign's total (issue 17): the same command under the same cap buys nothing
            raise ctx.kind.incomplete(
                f"campaign {campaign} stopped with {summary.pending} jobs pending at its cap of "
                f"{summary.max_cost_usd or 0.0:g} USD (max_cost, the campaign's total across runs); "
                f"run the same {ctx.kind.command} command with a larger --max-cost to resume"
            )
        raise ctx.kind.incomplete(
            f"campaign {campaign} stopped with {summary.pending} jobs pending ({summary.status}); "
            f"run the same {ctx.kind.command} command again to resume"
        )
    return summary


@dataclass(frozen=True)
class Step(Generic[R]):
    """One named step. `run(ctx, name)` runs the step's campaigns and records its result with its
    state `done` (or, by a rule of the study, marks steps `stopped`); it raises to leave the step
    pending. `reopen(ctx, record)`, asked only with `retry_failed` and only of a done step, says
    whether the step is opened again (its campaigns have failed calls worth asking again)."""

    name: str
    run: Callable[[StudyContext, str], object]
    reopen: Callable[[StudyContext, R], bool] | None = None


@dataclass(frozen=True)
class Study(Generic[R]):
    """Ordered named steps over one kind of stored record. `load(engine, name)` reads the record;
    `reopen(engine, name, steps)` marks steps pending again (needed when a step has a `reopen`
    rule); `stopped_reason(record)` says why a study was stopped (the line said when it is met)."""

    steps: tuple[Step[R], ...]
    load: Callable[[Engine, str], R]
    reopen: Callable[[Engine, str, Sequence[str]], R] | None = None
    stopped_reason: Callable[[R], str | None] | None = None

    def __post_init__(self) -> None:
        names = self.names
        if len(set(names)) != len(names):
            raise ValueError(f"a study's step names must be unique: {names}")
        if any(s.reopen is not None for s in self.steps) and self.reopen is None:
            raise ValueError("a step with a reopen rule needs the study's reopen writer")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.steps)

    def check_stop_after(self, stop_after: str | None) -> None:
        if stop_after is not None and stop_after not in self.names:
            raise BadInput(f"--stop-after must be one of {', '.join(self.names)}, got {stop_after!r}")

    def next_step(self, record: R) -> str | None:
        """The first step not done (pending or stopped), None when every step is done."""
        return next((s for s in self.names if record.steps.get(s, "pending") != "done"), None)

    def run(self, ctx: StudyContext, name: str, *, stop_after: str | None = None) -> R:
        """Run the steps not done, in order, up to `stop_after` (all by default), and return the
        record as stored after the last one."""
        self.check_stop_after(stop_after)
        rec = self.load(ctx.engine, name)
        if ctx.retry_failed:
            again = [
                s.name
                for s in self.steps
                if s.reopen is not None and rec.steps.get(s.name) == "done" and s.reopen(ctx, rec)
            ]
            if again:
                assert self.reopen is not None  # checked when the study was made
                rec = self.reopen(ctx.engine, name, again)
        for step in self.steps:
            state = rec.steps.get(step.name, "pending")
            if state == "stopped":
                why = self.stopped_reason(rec) if self.stopped_reason is not None else None
                ctx.say(f"stopped: {why}")
                break
            if state != "done":
                ctx.say(f"step {step.name}")
                step.run(ctx, name)
                rec = self.load(ctx.engine, name)
            if step.name == stop_after:
                break
        return rec
