"""Agreement between pairwise votes, as MT-Bench reports it (Zheng et al., 2023, §4.2).

Votes are A, B or T (tie) on a unit (a question and turn with two answers). For two voters, the
agreement is the share of units both voted on where their votes match, in two settings:

* **with ties** (MT-Bench's "w/ tie"): all three labels count, a tie matches only a tie;
* **without ties** ("w/o tie"): only units where neither voter said tie.

Pooled over a set of voter pairs (all humans, or one judge against every human), agreement is the
total of matches over the total of comparisons: the probability that two randomly chosen votes
of those voters on a randomly chosen shared unit agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

Votes = Mapping[str, Mapping[Any, str]]  # voter -> {unit: A | B | T}


@dataclass(frozen=True)
class Agreement:
    agree: int
    n: int

    @property
    def rate(self) -> float | None:
        return self.agree / self.n if self.n else None

    def as_dict(self) -> dict[str, Any]:
        return {"agree": self.agree, "n": self.n, "rate": self.rate}


def pair_agreement(a: Mapping[Any, str], b: Mapping[Any, str], *, ties: bool) -> Agreement:
    shared = [u for u in a if u in b and (ties or (a[u] != "T" and b[u] != "T"))]
    return Agreement(sum(1 for u in shared if a[u] == b[u]), len(shared))


def pooled(pairs: Iterable[Agreement]) -> Agreement:
    got = list(pairs)
    return Agreement(sum(p.agree for p in got), sum(p.n for p in got))


def among(votes: Votes, *, ties: bool) -> tuple[Agreement, dict[tuple[str, str], Agreement]]:
    """Every pair of voters; pooled and per pair."""
    each = {(x, y): pair_agreement(votes[x], votes[y], ties=ties) for x, y in combinations(sorted(votes), 2)}
    return pooled(each.values()), each


def against(judge: Mapping[Any, str], votes: Votes, *, ties: bool) -> tuple[Agreement, dict[str, Agreement]]:
    """One judge against each voter; pooled and per voter."""
    each = {h: pair_agreement(judge, votes[h], ties=ties) for h in sorted(votes)}
    return pooled(each.values()), each


# --- the MT-Bench paper's released counting -------------------------------------------------------
#
# FastChat's `llm_judge/compute_agreement.py` (the script behind the paper's Table 2) names a voter
# by its id: `expert_*` voters are "human", `author_*` voters a class of their own that the
# human–human figure never includes, and a judge is compared with each "human" vote on a unit where
# both voted. Turns are counted separately. `ban` drops a comparison where either vote is a tie
# (the "w/o tie" setting). On one unit every pair of "human" votes is compared once.

PROTOCOLS = ("pooled", "paper")


def voter_class(name: str) -> str:
    """`human` for `expert_*`, `author` for `author_*`, else `other` (the paper's `get_judge_name`)."""
    if name.startswith("expert"):
        return "human"
    if name.startswith("author"):
        return "author"
    return "other"


@dataclass(frozen=True)
class PaperCounts:
    """One turn (or all turns) under the paper's counting, with and without ties."""

    human_human: dict[str, Agreement]  # setting -> pooled over pairs of `expert_*` votes
    author_author: dict[str, Agreement]  # the class the paper keeps apart, for the record
    author_human: dict[str, Agreement]
    judge_human: dict[str, dict[str, Agreement]]  # setting -> judge -> against `expert_*` votes


def paper_counts(humans: Votes, judges: Votes, units: Iterable[Any] | None = None) -> PaperCounts:
    """The paper's figures over `units` (all units when None): experts are the humans."""
    keep = None if units is None else set(units)

    def only(v: Mapping[Any, str]) -> dict[Any, str]:
        return {u: x for u, x in v.items() if keep is None or u in keep}

    experts = {n: only(v) for n, v in humans.items() if voter_class(n) == "human"}
    authors = {n: only(v) for n, v in humans.items() if voter_class(n) == "author"}
    out: dict[str, dict[str, Any]] = {"hh": {}, "aa": {}, "ah": {}, "jh": {}}
    for setting, ties in (("with_ties", True), ("without_ties", False)):
        out["hh"][setting] = among(experts, ties=ties)[0]
        out["aa"][setting] = among(authors, ties=ties)[0]
        out["ah"][setting] = pooled(
            pair_agreement(authors[a], experts[e], ties=ties)
            for a in sorted(authors)
            for e in sorted(experts)
        )
        out["jh"][setting] = {j: against(only(jv), experts, ties=ties)[0] for j, jv in judges.items()}
    return PaperCounts(out["hh"], out["aa"], out["ah"], out["jh"])


def _settings(humans: Votes, judges: Votes, units: set[Any] | None, protocol: str) -> dict[str, Any]:
    def only(v: Mapping[Any, str]) -> dict[Any, str]:
        return {u: x for u, x in v.items() if units is None or u in units}

    if protocol == "paper":
        counts = paper_counts(humans, judges, units)
        experts = {n: only(v) for n, v in humans.items() if voter_class(n) == "human"}
        return {
            setting: {
                "human_human": counts.human_human[setting].as_dict(),
                "by_pair": {f"{a} – {b}": v.as_dict() for (a, b), v in among(experts, ties=ties)[1].items()},
                "judge_human": {j: a.as_dict() for j, a in counts.judge_human[setting].items()},
                "author_author": counts.author_author[setting].as_dict(),
                "author_human": counts.author_human[setting].as_dict(),
            }
            for setting, ties in (("with_ties", True), ("without_ties", False))
        }
    hs = {n: only(v) for n, v in humans.items()}
    out: dict[str, Any] = {}
    for setting, ties in (("with_ties", True), ("without_ties", False)):
        total, each = among(hs, ties=ties)
        out[setting] = {
            "human_human": total.as_dict(),
            "by_pair": {f"{a} – {b}": v.as_dict() for (a, b), v in each.items()},
            "judge_human": {j: against(only(jv), hs, ties=ties)[0].as_dict() for j, jv in judges.items()},
        }
    return out


def vote_report(
    pairs: str, humans: Votes, judges: Votes, turns: Mapping[Any, str], *, protocol: str = "pooled"
) -> dict[str, Any]:
    """`metrics votes --json`: both settings over all units and per turn, under `protocol`.

    `pooled` compares every pair of human voters (authors and experts alike) and each judge with
    every human; `paper` follows the released script: `expert_*` voters are the humans, `author_*`
    voters are reported apart (`author_author`, `author_human`) and never enter `human_human`."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}")
    out: dict[str, Any] = {
        "pairs": pairs,
        "protocol": protocol,
        "humans": sorted(humans)
        if protocol == "pooled"
        else sorted(n for n in humans if voter_class(n) == "human"),
        "units": len({u for v in humans.values() for u in v}),
    }
    if protocol == "paper":
        out["authors"] = sorted(n for n in humans if voter_class(n) == "author")
    out.update(_settings(humans, judges, None, protocol))
    by_turn: dict[str, Any] = {}
    for turn in sorted({t for t in turns.values() if t}, key=int):
        units = {u for u, t in turns.items() if t == turn}
        by_turn[turn] = {"units": len({u for v in humans.values() for u in v if u in units})}
        by_turn[turn].update(_settings(humans, judges, units, protocol))
    out["by_turn"] = by_turn
    return out
