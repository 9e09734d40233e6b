"""First-version smoke tests of the protocol API (the full tables live in the sibling modules)."""

from __future__ import annotations

from judgepanel.protocol import UnitText, combine_orders, parse_reply, render_pairwise, to_canonical
from judgepanel.rubrics import bundled_rubric


def test_pairwise_round_trip() -> None:
    rubric = bundled_rubric("summeval")
    a = UnitText("a", "First summary.", "The article.")
    b = UnitText("b", "Second summary.", "The article.")
    prompt = render_pairwise(a, b, order="BA", dimension="coherence", rubric=rubric)
    user = prompt.messages[-1]["content"]
    assert user.index("Second summary.") < user.index("First summary.")
    parsed = parse_reply(prompt.schema_name, '{"rationale": "r", "verdict": "A"}', None)
    assert parsed.ok and parsed.value == "A"
    assert to_canonical("A", "BA") == "B"
    assert combine_orders("B", "B") == "B"
