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
