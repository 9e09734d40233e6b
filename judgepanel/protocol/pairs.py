"""Pairwise verdicts: from the order shown back to the pair's canonical order, and the two orders combined.

A pair (a, b) is asked twice. In order AB, `a` sits in slot A; in order BA, `b` does. The judge
answers "A", "B" or "tie" *as presented*; `to_canonical` maps that back to the pair's order:

    presented   order AB   order BA
    A           A          B
    B           B          A
    tie         T          T

`combine_orders(ab, ba)` then combines the canonical verdicts of the two orders (rows: the AB
verdict, columns: the BA verdict; "-" is a missing verdict, e.g. a parse failure):

    AB \\ BA   A              B              T              -
    A         A  consistent  inconsistent   A  weak        missing
    B         inconsistent   B  consistent  B  weak        missing
    T         A  weak        B  weak        T  tie         missing
    -         missing        missing        missing        missing

The rule: score each canonical verdict as a's preference (A = 1, T = ½, B = 0); the pair's verdict
is the side the mean of the two orders leans to, T when it is exactly ½. Two cases are named
rather than folded into that rule:

- **inconsistent** (A in one order, B in the other): the judge picked the same *slot* both
  times, so the pick says where a text stood, not which text it was. The mean is ½, but the pair
  is reported as the distinct value ``"inconsistent"`` so bias metrics can count it; for a
  three-way A/B/T label (agreement with humans) `as_label` maps it to ``"T"``, as MT-Bench
  (Zheng et al., 2023) counts inconsistent swaps as ties.
- **weak** (a side in one order, tie in the other): mean ¾ or ¼, so the combined verdict is that
  side. The judge never preferred the other text, so nothing contradicts the pick; `PairOutcome`
  marks it `kind="weak"` and `preference` keeps the ¾ / ¼ for analyses that want strength.

A missing verdict in either order makes the pair ``"missing"``: one order alone cannot be told
apart from position bias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Canonical = Literal["A", "B", "T"]
Combined = Literal["A", "B", "T", "inconsistent", "missing"]
Kind = Literal["consistent", "weak", "tie", "inconsistent", "missing"]
Slot = Literal["front", "back"]

INCONSISTENT: Final = "inconsistent"
MISSING: Final = "missing"

_PRESENTED = {"A": "A", "B": "B", "tie": "T", "T": "T"}
_SWAP = {"A": "B", "B": "A", "T": "T"}
_PREFERENCE = {"A": 1.0, "T": 0.5, "B": 0.0}


def to_canonical(value: str, order: Literal["AB", "BA"]) -> Canonical:
    """A verdict as presented ("A", "B", "tie"; "T" accepted) -> the pair's canonical A/B/T."""
    if order not in ("AB", "BA"):
        raise ValueError(f"order must be 'AB' or 'BA', got {order!r}")
    try:
        shown = _PRESENTED[value]
    except KeyError:
        raise ValueError(f"not a pairwise verdict: {value!r} (expected A, B or tie)") from None
    out = shown if order == "AB" else _SWAP[shown]
    assert out in ("A", "B", "T")
    return out  # type: ignore[return-value]


@dataclass(frozen=True)
class PairOutcome:
    """The two orders of one pair, combined.

    `verdict` is what `combine_orders` returns; `kind` names the table cell; `preference` is the
    mean preference for a (1 = a in both orders, 0 = b in both; None if missing); `favoured_slot`
    says, for an inconsistent pair, which position won both times ("front" = slot A)."""

    verdict: Combined
    kind: Kind
    preference: float | None
    favoured_slot: Slot | None = None


def _check(v: str | None, which: str) -> str | None:
    if v is not None and v not in _PREFERENCE:
        raise ValueError(f"{which} verdict must be canonical A, B, T or None, got {v!r}")
    return v


def pair_outcome(ab: str | None, ba: str | None) -> PairOutcome:
    """Combine the canonical verdict of the AB order and of the BA order (see the module table)."""
    ab, ba = _check(ab, "AB"), _check(ba, "BA")
    if ab is None or ba is None:
        return PairOutcome(MISSING, "missing", None)
    pref = (_PREFERENCE[ab] + _PREFERENCE[ba]) / 2
    if ab == ba:
        if ab == "T":
            return PairOutcome("T", "tie", pref)
        return PairOutcome("A" if ab == "A" else "B", "consistent", pref)
    if "T" not in (ab, ba):
        # canonical A in order AB is slot A (front); canonical B in order BA is also slot A
        return PairOutcome(INCONSISTENT, "inconsistent", pref, "front" if ab == "A" else "back")
    return PairOutcome("A" if pref > 0.5 else "B", "weak", pref)


def combine_orders(ab: str | None, ba: str | None) -> str:
    """The pair's verdict from its canonical AB and BA verdicts: "A", "B", "T", "inconsistent" or
    "missing", per the table in this module's docstring."""
    return pair_outcome(ab, ba).verdict


def as_label(combined: str) -> Canonical | None:
    """A combined verdict as a three-way label for agreement metrics: inconsistent counts as a tie,
    missing as no label."""
    if combined == MISSING:
        return None
    if combined == INCONSISTENT:
        return "T"
    if combined in ("A", "B", "T"):
        return combined  # type: ignore[return-value]
    raise ValueError(f"not a combined pair verdict: {combined!r}")


COMBINATION_TABLE: Final[dict[tuple[str | None, str | None], str]] = {
    (ab, ba): combine_orders(ab, ba) for ab in ("A", "B", "T", None) for ba in ("A", "B", "T", None)
}
