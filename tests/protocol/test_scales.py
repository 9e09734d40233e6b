"""Score scales other than 1..5 (USR: 0..1, 1..3): rubric, prompt, reply schema, parser and the
simulated judge all take the range from the rubric dimension, and 1..5 dimensions are unchanged."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from judgepanel.errors import BadInput
from judgepanel.protocol import UnitText, parse_reply, render_pointwise
from judgepanel.protocol.schemas import pointwise_schema
from judgepanel.protocol.templates import POINTWISE_TEMPLATES, SCALED_POINTWISE_TEMPLATES, pointwise_scale
from judgepanel.rubrics import SCALE, RubricDoc, bundled_rubric
from judgepanel.runner.prepare import score_levels
from judgepanel.simjudge import simulate
from judgepanel.simjudge.reading import prompt_scale

USR = bundled_rubric("usr")
SUMMEVAL = bundled_rubric("summeval")
ITEM = UnitText(
    "tc000/x",
    "i love jazz too , especially the new orleans kind .",
    "Dialogue so far:\ndo you like jazz ?\n\nFact available to the responder:\njazz began in new orleans .",
)
USR_SCALES = {
    "understandability": (0, 1),
    "naturalness": (1, 3),
    "context_maintenance": (1, 3),
    "engagingness": (1, 3),
    "knowledge_use": (0, 1),
    "overall_quality": (1, 5),
}


def test_usr_rubric_scales_match_the_usr_release() -> None:
    from judgepanel.datasets.usr import DIMENSIONS

    assert {d.name: d.scale for d in USR.dimensions} == USR_SCALES
    assert {d: (lo, hi) for d, lo, hi in DIMENSIONS.values()} == USR_SCALES
    for d in USR.dimensions:
        assert [lv for lv, _ in d.anchors] == list(d.levels)
        assert d.clause_ids == tuple(f"{d.name}.{i}" for i in range(1, len(d.clauses) + 1))
    assert (USR.source_label, USR.candidate_label) == ("dialogue and fact", "response")


def test_default_scale_is_not_stored_so_older_documents_keep_their_hash() -> None:
    doc = SUMMEVAL.to_dict()
    assert all("scale" not in d for d in doc["dimensions"])
    assert all(d.scale == SCALE for d in SUMMEVAL.dimensions)
    stored = USR.to_dict()
    assert [d.get("scale") for d in stored["dimensions"]] == [[0, 1], [1, 3], [1, 3], [1, 3], [0, 1], None]
    again = RubricDoc.from_dict(stored)
    assert again == USR and again.content_hash == USR.content_hash
    # the explicit default scale is the same document as no scale
    explicit = copy.deepcopy(doc)
    for d in explicit["dimensions"]:
        d["scale"] = [1, 5]
    assert RubricDoc.from_dict(explicit).content_hash == SUMMEVAL.content_hash


def _one_dim(scale: Any, anchors: dict[Any, str]) -> dict[str, Any]:
    return {
        "name": "t",
        "dimensions": {
            "ok": {
                "definition": "d",
                "criteria": ["c"],
                "scale": scale,
                "anchors": anchors,
                "clauses": [{"id": "ok.1", "text": "x"}],
            }
        },
    }


@pytest.mark.parametrize(
    ("scale", "anchors", "message"),
    [
        ([0, 1], {0: "a", 1: "b", 2: "c"}, "2 is not a score level 0..1"),
        ([1, 3], {1: "a", 3: "c"}, "missing level(s) 2: every level 1..3 needs an anchor"),
        ([3, 1], {1: "a"}, "dimensions.ok.scale: expected [lowest, highest]"),
        ([1], {1: "a"}, "dimensions.ok.scale: expected"),
        ([0, 11], {1: "a"}, "at most 11 levels"),
        ([-1, 1], {1: "a"}, "dimensions.ok.scale"),
        ([True, 2], {1: "a"}, "dimensions.ok.scale"),
        ("1-3", {1: "a"}, "dimensions.ok.scale"),
    ],
)
def test_bad_scale_or_anchors_name_the_field(scale: Any, anchors: dict[Any, str], message: str) -> None:
    with pytest.raises(BadInput) as exc:
        RubricDoc.from_dict(_one_dim(scale, anchors), origin="t.yaml")
    assert str(exc.value).startswith("t.yaml: dimensions.ok.")
    assert message in str(exc.value)


@pytest.mark.parametrize("condition", ["none", "criteria", "rubric"])
def test_non_default_scale_uses_the_scaled_template_and_schema(condition: str) -> None:
    p = render_pointwise(ITEM, condition=condition, dimension="naturalness", rubric=USR)  # type: ignore[arg-type]
    user = p.messages[-1]["content"]
    assert p.template_name == SCALED_POINTWISE_TEMPLATES[condition]
    assert "on a scale from 1 (worst) to 3 (best)" in user.splitlines()[0]
    assert '"score": 1 | 2 | 3}' in user
    assert "an integer from 1 to 3." in user
    assert "5" not in user.replace(ITEM.input or "", "")
    assert p.schema["properties"]["score"]["enum"] == [1, 2, 3]
    assert score_levels(p) == (1, 2, 3)
    if condition == "rubric":
        assert "1: Clearly unnatural" in user and "3: Reads like" in user


@pytest.mark.parametrize("condition", ["none", "criteria", "rubric"])
def test_one_to_five_dimensions_keep_the_one_to_five_schema(condition: str) -> None:
    for rubric, dim in ((SUMMEVAL, "coherence"), (USR, "overall_quality")):
        p = render_pointwise(ITEM, condition=condition, dimension=dim, rubric=rubric)  # type: ignore[arg-type]
        assert p.template_name == POINTWISE_TEMPLATES[condition]
        assert p.schema == pointwise_schema()
        assert score_levels(p) == (1, 2, 3, 4, 5)


def test_none_without_a_rubric_or_with_an_unknown_dimension_is_one_to_five() -> None:
    assert pointwise_scale(None, "understandability") == SCALE
    assert pointwise_scale(USR, "nope") == SCALE
    assert pointwise_scale(USR, None) == SCALE
    p = render_pointwise(ITEM, condition="none", dimension="understandability", rubric=None)
    assert p.template_name == "pointwise_none.v3"
    binary = render_pointwise(ITEM, condition="none", dimension="understandability", rubric=USR)
    assert "from 0 (worst) to 1 (best)" in binary.messages[-1]["content"]
    assert '"score": 0 | 1}' in binary.messages[-1]["content"]


@pytest.mark.parametrize(
    ("levels", "text", "structured", "expected"),
    [
        ((0, 1), "Fine.\n\nScore: 0", None, 0),
        ((0, 1), '{"rationale": "ok", "score": 1}', None, 1),
        ((0, 1), "", {"rationale": "ok", "score": 0}, 0),
        ((1, 2, 3), "Score: 2/3", None, 2),
        ((1, 2, 3), "Rating: [[3]]", None, 3),
        ((1, 2, 3, 4, 5), "Score: 0", None, None),
        ((0, 1), "Score: 2", None, None),
        ((1, 2, 3), "Score: 4/5", None, None),
        ((1, 2, 3), '{"rationale": "x", "score": 5}', None, None),
    ],
)
def test_parser_reads_the_prompt_levels(
    levels: tuple[int, ...], text: str, structured: dict[str, Any] | None, expected: int | None
) -> None:
    parsed = parse_reply("pointwise_verdict", text, structured, levels=levels)
    if expected is None:
        assert not parsed.ok and parsed.error
        assert f"{levels[0]}..{levels[-1]}" in parsed.error
    else:
        assert parsed.ok and parsed.score == float(expected) and parsed.value == str(expected)


def test_parser_refuses_empty_levels() -> None:
    with pytest.raises(ValueError, match="levels"):
        parse_reply("pointwise_verdict", "Score: 1", None, levels=())


@pytest.mark.parametrize("dim", sorted(USR_SCALES))
def test_simulated_judge_answers_on_the_prompt_scale(dim: str) -> None:
    lo, hi = USR_SCALES[dim]
    seen = set()
    outputs = [f"{ITEM.output} number {i} " * (1 + i % 3) for i in range(30)]
    outputs += [str(ITEM.input), "hmm hmm hmm hmm"]  # the best and the worst the heuristic can see
    for i, out in enumerate(outputs):
        item = UnitText(f"x{i}", out, ITEM.input)
        p = render_pointwise(item, condition="rubric", dimension=dim, rubric=USR)
        assert prompt_scale(p.messages[-1]["content"]) == (lo, hi)
        for structured in (True, False):
            # noise-free: the heuristic itself, not a lucky draw, must reach both ends
            reply = simulate(
                "judge-a", p.messages, schema_name=p.schema_name, structured=structured, params={"noise": 0.0}
            )
            parsed = parse_reply(p.schema_name, reply.text, reply.structured, levels=score_levels(p))
            assert parsed.ok, parsed.error
            assert parsed.score is not None and lo <= parsed.score <= hi
            seen.add(parsed.score)
    assert {float(lo), float(hi)} <= seen  # the heuristic reaches both ends of the scale


def test_simulated_judge_on_one_to_five_is_unchanged_by_the_scale_reader() -> None:
    p = render_pointwise(ITEM, condition="rubric", dimension="coherence", rubric=SUMMEVAL)
    assert prompt_scale(p.messages[-1]["content"]) == (1, 5)
    # a prompt naming no scale (a foreign prompt) is read as 1..5
    assert prompt_scale("Rate this. <candidate>x</candidate>") == (1, 5)
    # an item quoting a different scale after the template's first line does not move it
    quoted = UnitText("q", "on a scale from 0 (worst) to 1 (best)", ITEM.input)
    q = render_pointwise(quoted, condition="none", dimension="naturalness", rubric=USR)
    assert prompt_scale(q.messages[-1]["content"]) == (1, 3)


def test_q_window_moves_the_simulated_scores_and_is_part_of_the_judge() -> None:
    from judgepanel.providers import parse_spec

    spec = parse_spec("sim:a?q_low=0.3&q_span=0.3")
    assert spec.request_params() == {"q_low": 0.3, "q_span": 0.3}
    for bad in ("sim:a?q_span=0", "sim:a?q_low=2"):
        with pytest.raises(BadInput):
            parse_spec(bad)
    p = render_pointwise(ITEM, condition="rubric", dimension="naturalness", rubric=USR)
    default = simulate("a", p.messages, schema_name=p.schema_name, structured=True, params={"noise": 0})
    low = simulate(
        "a", p.messages, schema_name=p.schema_name, structured=True, params={"noise": 0, "q_low": 0.0}
    )
    assert default.structured is not None and low.structured is not None
    # a dialogue reply's q is far below 0.70, so the default window gives the lowest level
    assert default.structured["score"] == 1 and low.structured["score"] == 3
