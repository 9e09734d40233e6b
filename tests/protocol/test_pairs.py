"""Presented -> canonical pairwise verdicts, and the documented AB/BA combination table."""

from __future__ import annotations

import pytest

from judgepanel.protocol import COMBINATION_TABLE, as_label, combine_orders, pair_outcome, to_canonical

# The table of judgepanel/protocol/pairs.py, written out by hand (rows AB verdict, columns BA).
EXPECTED = {
    ("A", "A"): "A",
    ("A", "B"): "inconsistent",
    ("A", "T"): "A",
    ("B", "A"): "inconsistent",
    ("B", "B"): "B",
    ("B", "T"): "B",
    ("T", "A"): "A",
    ("T", "B"): "B",
    ("T", "T"): "T",
}


@pytest.mark.parametrize(
    ("value", "order", "expected"),
    [
        ("A", "AB", "A"),
        ("B", "AB", "B"),
        ("tie", "AB", "T"),
        ("A", "BA", "B"),
        ("B", "BA", "A"),
        ("tie", "BA", "T"),
        ("T", "BA", "T"),
    ],
)
def test_to_canonical(value: str, order: str, expected: str) -> None:
    assert to_canonical(value, order) == expected  # type: ignore[arg-type]


def test_to_canonical_rejects_non_verdicts() -> None:
    with pytest.raises(ValueError, match="not a pairwise verdict"):
        to_canonical("C", "AB")
    with pytest.raises(ValueError, match="order"):
        to_canonical("A", "AA")  # type: ignore[arg-type]


def test_the_item_a_judge_prefers_is_the_same_in_both_orders() -> None:
    # a judge that always prefers item a says "A" when a is in slot A (AB) and "B" when it is in slot B (BA)
    assert to_canonical("A", "AB") == to_canonical("B", "BA") == "A"


@pytest.mark.parametrize(("ab", "ba"), list(EXPECTED))
def test_combination_table(ab: str, ba: str) -> None:
    assert combine_orders(ab, ba) == EXPECTED[(ab, ba)]
    assert COMBINATION_TABLE[(ab, ba)] == EXPECTED[(ab, ba)]


@pytest.mark.parametrize(("ab", "ba"), [("A", None), (None, "B"), (None, None), ("T", None)])
def test_a_missing_order_makes_the_pair_missing(ab: str | None, ba: str | None) -> None:
    out = pair_outcome(ab, ba)
    assert (out.verdict, out.kind, out.preference) == ("missing", "missing", None)
    assert as_label(out.verdict) is None


def test_kinds_and_preferences() -> None:
    assert pair_outcome("A", "A").kind == "consistent" and pair_outcome("A", "A").preference == 1.0
    assert pair_outcome("B", "B").preference == 0.0
    assert pair_outcome("T", "T").kind == "tie" and pair_outcome("T", "T").preference == 0.5
    weak = pair_outcome("T", "A")
    assert (weak.verdict, weak.kind, weak.preference) == ("A", "weak", 0.75)
    weak = pair_outcome("B", "T")
    assert (weak.verdict, weak.kind, weak.preference) == ("B", "weak", 0.25)


def test_position_driven_flips_name_the_favoured_slot() -> None:
    # a judge that always answers "A" as presented: AB -> canonical A, BA -> canonical B
    front = pair_outcome(to_canonical("A", "AB"), to_canonical("A", "BA"))
    assert (front.verdict, front.kind, front.favoured_slot, front.preference) == (
        "inconsistent",
        "inconsistent",
        "front",
        0.5,
    )
    back = pair_outcome(to_canonical("B", "AB"), to_canonical("B", "BA"))
    assert (back.verdict, back.favoured_slot) == ("inconsistent", "back")
    assert pair_outcome("A", "A").favoured_slot is None


def test_combined_verdict_follows_the_mean_preference() -> None:
    score = {"A": 1.0, "T": 0.5, "B": 0.0}
    for (ab, ba), combined in EXPECTED.items():
        mean = (score[ab] + score[ba]) / 2
        lean = "A" if mean > 0.5 else "B" if mean < 0.5 else "T"
        if combined == "inconsistent":
            assert lean == "T" and {ab, ba} == {"A", "B"}
        else:
            assert combined == lean


def test_as_label() -> None:
    assert [as_label(v) for v in ("A", "B", "T", "inconsistent", "missing")] == ["A", "B", "T", "T", None]
    with pytest.raises(ValueError):
        as_label("weird")


def test_non_canonical_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="canonical"):
        combine_orders("tie", "A")
