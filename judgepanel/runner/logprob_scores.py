"""Logprob-weighted scores of a pointwise campaign read again from its stored replies, and the
share of each judge's verdicts whose expectation was withheld.

Boundary: a use case of the runner layer — it reads stored replies (`store.logprob_scores`),
renders each job's prompt as the run did (`runner.prepare.render`, the campaign's stored
templates, rubric and options) and reads each reply with the run's own function
(`runner.prepare.read_logprobs`). One code path: the scale is the prompt's reply schema, the
answer is where the template's verdict pattern finds it, and the texts the prompt quotes — the
rendered prompt's, not the item's raw input and output — are not read as the judge's answer
(issue 30 §4). A verdict that did not parse gets no distribution (`UNPARSED`), a judge that did
not ask for logprobs the note `NOT_REQUESTED`.

**Withheld expectations.** Where less than half the probability at the answer position is on the
scale (``protocol.logprobs.MASS_FLOOR``), or no distribution can be read at all, the run keeps
the argmax score: the stored ``score`` is then the argmax, not an expectation. That is informative
missingness — a judge that hesitates between a score and some other token is more often one whose
score is doubtful — so the commands that read the expectation (`metrics prevalence`, `validate …
--campaign` with a continuous scorer) report per judge how many of its parsed verdicts fell back
(`logprob_withheld`: ``verdicts``, ``expectation``, ``withheld``, ``share``, ``below_mass_floor``,
``reasons``, ``fallback`` = "argmax") and say so in their text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from judgepanel.errors import BadInput
from judgepanel.protocol.logprobs import LOW_MASS, LogprobScore, score_scale
from judgepanel.protocol.templates import Prompt
from judgepanel.providers.spec import parse_spec
from judgepanel.runner.checkers import clause_plan
from judgepanel.runner.prepare import (
    CampaignContext,
    context_options,
    read_logprobs,
    render,
    render_key,
    score_levels,
)
from judgepanel.store import campaigns as store
from judgepanel.store.logprob_scores import NOT_REQUESTED, UNPARSED, JobLogprobScore, pointwise_replies

__all__ = [
    "NOT_REQUESTED",
    "UNPARSED",
    "JobLogprobScore",
    "LogprobCoverage",
    "campaign_logprob_scores",
    "logprob_withheld",
    "withheld_by_judge",
    "withheld_words",
]


def campaign_context(engine: Engine, campaign: str) -> CampaignContext:
    """What rendering the campaign's prompts needs, from its stored spec (as `estimate` builds it)."""
    spec, rv_id = store.campaign_spec(engine, campaign)
    judges = {s.name: s for s in (parse_spec(j) for j in (spec.judge_specs or spec.judges))}
    asked, answered = clause_plan(engine, campaign, rv_id, spec.protocol, custom=bool(spec.templates))
    return CampaignContext(
        spec.protocol,
        store.rubric_doc(engine, rv_id) if rv_id is not None else None,
        asked,
        judges,
        checkers=answered,
        **context_options(spec),
    )


def campaign_logprob_scores(
    engine: Engine, campaign: str, *, low: int | None = None, high: int | None = None
) -> list[JobLogprobScore]:
    """One row per job with a verdict (its last attempt), in job order, each reply read as the
    run read it. ``low``/``high`` override the scale the prompt states."""
    replies = pointwise_replies(engine, campaign)
    ctx = campaign_context(engine, campaign)
    prompts: dict[tuple[Any, ...], Prompt] = {}
    out: list[JobLogprobScore] = []
    for r in replies:
        job = r.job
        if r.params.get("scoring") != "logprobs":
            score = LogprobScore(None, None, None, None, None, NOT_REQUESTED)
        elif r.parse_status != "ok":
            score = LogprobScore(None, None, None, None, None, UNPARSED)
        else:
            key = render_key(job)
            prompt = prompts.get(key) or prompts.setdefault(key, render(job, ctx))
            allowed = None
            if low is not None or high is not None:
                levels = score_levels(prompt)
                allowed = score_scale(levels[0] if low is None else low, levels[-1] if high is None else high)
            score = read_logprobs(prompt, r.raw_body or "", r.verdict, allowed)
        out.append(
            JobLogprobScore(
                job.id, job.judge, job.item_id, job.dimension, job.repeat, r.verdict, score, job.condition
            )
        )
    return out


@dataclass(frozen=True)
class LogprobCoverage:
    """How many of one logprob-scored judge's parsed verdicts carry an expectation."""

    judge: str
    verdicts: int
    expectation: int
    reasons: dict[str, int] = field(default_factory=dict)  # note -> verdicts without an expectation

    @property
    def withheld(self) -> int:
        return self.verdicts - self.expectation

    @property
    def share(self) -> float | None:
        return self.withheld / self.verdicts if self.verdicts else None

    @property
    def below_mass_floor(self) -> int:
        return self.reasons.get(LOW_MASS, 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdicts": self.verdicts,
            "expectation": self.expectation,
            "withheld": self.withheld,
            "share": self.share,
            "below_mass_floor": self.below_mass_floor,
            "reasons": dict(self.reasons),
            "fallback": "argmax",
        }

    def words(self, name: str | None = None) -> str | None:
        """One line for the text output, or None when nothing was withheld."""
        return withheld_words(name or self.judge, self.as_dict())


def withheld_words(name: str, coverage: Mapping[str, Any]) -> str | None:
    """The text line for one judge's ``logprob_withheld`` entry, or None when nothing was withheld."""
    if not coverage["withheld"]:
        return None
    low = coverage["below_mass_floor"]
    floor = f", {low} below the probability-mass floor" if low else ""
    return (
        f"judge {name}: no logprob expectation on {coverage['withheld']} of its {coverage['verdicts']} "
        f"verdicts ({coverage['share']:.1%}{floor}); those items count at their argmax score"
    )


def withheld_by_judge(scores: Sequence[JobLogprobScore]) -> dict[str, LogprobCoverage]:
    """Per logprob-scored judge, its parsed verdicts and how many have no expectation (why)."""
    verdicts: Counter[str] = Counter()
    with_e: Counter[str] = Counter()
    reasons: dict[str, Counter[str]] = {}
    for s in scores:
        note = s.logprobs.note
        if note in (NOT_REQUESTED, UNPARSED):
            continue
        verdicts[s.judge] += 1
        if s.logprobs.expectation is not None:
            with_e[s.judge] += 1
        else:
            reasons.setdefault(s.judge, Counter())[note or "no expectation"] += 1
    return {j: LogprobCoverage(j, n, with_e[j], dict(reasons.get(j, {}))) for j, n in verdicts.items()}


def _scores_by_logprobs(judge: str) -> bool:
    """Whether a stored judge name is a spec with ``scoring=logprobs``; an imported grader's name
    (``inspect:…``, ``promptfoo:…``) is no provider spec and never is."""
    try:
        return parse_spec(judge).params.get("scoring") == "logprobs"
    except BadInput:
        return False


def logprob_withheld(
    engine: Engine,
    campaign: str,
    *,
    judges: Sequence[str] | None = None,
    dimension: str | None = None,
    condition: str | None = None,
) -> dict[str, LogprobCoverage]:
    """`withheld_by_judge` over the campaign's jobs of these judges (canonical names), dimension
    and condition (None: all); judges without ``scoring=logprobs`` are not listed (and when none of
    the judges named has it, no reply is read)."""
    if judges is not None and not any(_scores_by_logprobs(j) for j in judges):
        return {}
    rows = [
        s
        for s in campaign_logprob_scores(engine, campaign)
        if (judges is None or s.judge in judges)
        and (dimension is None or s.dimension == dimension)
        and (condition is None or s.condition == condition)
    ]
    return withheld_by_judge(rows)
