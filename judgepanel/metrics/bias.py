"""Position bias of a pairwise judge, from pairs it answered in both orders (AB and BA).

Each swapped pair gives two verdicts *as presented*: v_AB (pair shown as a, b) and v_BA (shown as
b, a), each "A" (front slot), "B" (back slot) or a tie. A pair is **decisive** when neither
verdict is a tie. Then

* **consistent**   v_AB ≠ v_BA: the judge picked the same *text* in both orders;
* **inconsistent** v_AB = v_BA: it picked the same *slot*, so the pick followed the position;
  of these, **back_wins** picked the back slot both times (B, B) and **front_wins** the front
  slot both times (A, A), so back_wins + front_wins = inconsistent.

Without position bias an inconsistent pair is as likely to favour the back as the front slot. The
exact two-sided sign test (Dixon & Mood, 1946) of H0: P(back) = ½ over the n = back_wins +
front_wins inconsistent pairs (consistent pairs are the sign test's zero differences and drop
out) is

    p = Σ_{k : P(K=k) ≤ P(K=b)} C(n, k) / 2ⁿ,   K ~ Binomial(n, ½), b = back_wins

(scipy.stats.binomtest's two-sided rule: the probability of every outcome no likelier than the
observed one). With no inconsistent pair there is no evidence of bias and p = 1.

Reference: Zheng et al. (2023), "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", §3.3
(swap positions; a judge is consistent when its pick survives the swap).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_FRONT = "A"
_BACK = "B"
_TIES = frozenset({"T", "tie", "TIE", "Tie"})


@dataclass(frozen=True)
class PositionBias:
    pairs: int  # swapped pairs (both orders answered)
    decisive: int  # of which neither verdict is a tie
    consistent: int
    inconsistent: int
    back_wins: int
    front_wins: int
    p_value: float

    @property
    def back_share(self) -> float:
        """back_wins / inconsistent (NaN without inconsistent pairs)."""
        return self.back_wins / self.inconsistent if self.inconsistent else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            "back_wins": self.back_wins,
            "front_wins": self.front_wins,
            "consistent": self.consistent,
            "inconsistent": self.inconsistent,
            "p_value": self.p_value,
            "pairs": self.pairs,
            "decisive": self.decisive,
        }


def position_bias(
    ab: Sequence[str] | np.ndarray[Any, np.dtype[Any]], ba: Sequence[str] | np.ndarray[Any, np.dtype[Any]]
) -> PositionBias:
    """`ab[i]`, `ba[i]`: the presented verdicts ("A", "B", "T"/"tie") of pair i in each order."""
    from scipy.stats import binomtest  # on first use: SciPy is slow to import

    a = np.asarray(ab, dtype=object)
    b = np.asarray(ba, dtype=object)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"ab and ba must be 1-d and of equal length, got {a.shape} and {b.shape}")
    valid = {_FRONT, _BACK} | _TIES
    bad = [v for v in np.concatenate([a, b]) if v not in valid]
    if bad:
        raise ValueError(f"verdicts must be A, B or T/tie as presented, got {bad[0]!r}")
    tie_a = np.isin(a, list(_TIES))
    tie_b = np.isin(b, list(_TIES))
    decisive = ~tie_a & ~tie_b
    same = decisive & (a == b)
    back = int(np.sum(same & (a == _BACK)))
    front = int(np.sum(same & (a == _FRONT)))
    n = back + front
    p = float(binomtest(back, n, 0.5, alternative="two-sided").pvalue) if n else 1.0
    return PositionBias(
        pairs=int(a.size),
        decisive=int(decisive.sum()),
        consistent=int(decisive.sum()) - n,
        inconsistent=n,
        back_wins=back,
        front_wins=front,
        p_value=p,
    )
