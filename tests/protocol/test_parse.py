"""parse_reply on replies shaped like what real judges send, and on what they must not be fooled by.

Expected values are read off each reply by hand: the judge's own last answer."""

from __future__ import annotations

import time
from typing import Any

import pytest

from judgepanel.protocol import ParsedVerdict, parse_reply
from judgepanel.protocol.parse import MAX_SCAN, normalise_choice, normalise_score

PW, PT, CL = "pairwise_verdict", "pointwise_verdict", "clause_verdicts"

# (schema, reply text, structured output, expected value or None for a failure, expected method)
CASES: list[tuple[str, str, dict[str, Any] | None, str | None, str | None]] = [
    # --- pairwise, structured and whole-text JSON
    (PW, "", {"rationale": "B is tighter.", "verdict": "B"}, "B", "structured"),
    (PW, '{"rationale": "x", "verdict": "A"}', None, "A", "structured"),
    (PW, '  {"verdict": "tie", "rationale": "same"}\n', None, "tie", "structured"),
    (PW, '```json\n{"rationale": "x", "verdict": "Tie"}\n```', None, "tie", "structured"),
    (PW, '```\n{"rationale": "x", "verdict": "B"}\n```', None, "B", "structured"),
    (PW, '{"Rationale": "x", "Verdict": "Assistant A"}', None, "A", "structured"),
    (PW, '{"rationale": "x", "verdict": "[[B]]"}', None, "B", "structured"),
    (PW, '{"rationale": "x", "verdict": "Output (a)"}', None, "A", "structured"),
    (PW, '{"rationale": "x", "verdict": "Response B is better"}', None, "B", "structured"),
    (PW, '{"rationale": "x", "verdict": "draw"}', None, "tie", "structured"),
    (PW, '{"rationale": "x", "verdict": "A",}', None, "A", "structured"),  # trailing comma
    (PW, "{'rationale': 'x', 'verdict': 'B'}", None, "B", "structured"),  # Python-style quotes
    (PW, '{"rationale": "x", "winner": "A"}', None, "A", "structured"),
    # --- pairwise, JSON inside prose
    (PW, 'Let me compare.\n```json\n{"rationale": "x", "verdict": "B"}\n```', None, "B", "json_tail"),
    (PW, '{"rationale": "x", "verdict": "A"}\nI hope this helps {smile}.', None, "A", "json_tail"),
    (PW, 'Candidate A writes {"verdict": "A"}.\n{"rationale": "r", "verdict": "B"}', None, "B", "json_tail"),
    (
        PW,
        '{\n  "rationale": "A says \\"Verdict: A\\" in its text",\n  "verdict": "B"\n}\nThanks.',
        None,
        "B",
        "json_tail",
    ),
    (
        PW,
        'Step one {"note": {"verdict": "A"}} then {"rationale": "r", "verdict": "tie"}',
        None,
        "tie",
        "json_tail",
    ),
    # --- pairwise, prose with a final line
    (PW, "A is longer but B is accurate.\nVerdict: B", None, "B", "line_tail"),
    (PW, "Reasoning.\n\n**Final Verdict:** A", None, "A", "line_tail"),
    (PW, "Reasoning.\nVerdict: tie.", None, "tie", "line_tail"),
    (PW, "Reasoning.\nverdict = Tie", None, "tie", "line_tail"),
    (PW, "Reasoning.\nVerdict: Assistant B, because it is shorter.", None, "B", "line_tail"),
    (PW, "Reasoning.\nVerdict: A (more faithful)", None, "A", "line_tail"),
    (PW, "Reasoning.\nVerdict: B\n\nLet me know if you need more.", None, "B", "line_tail"),
    (PW, "Both are fine.\n\nMy final verdict is: [[C]]", None, "tie", "line_tail"),
    (PW, "After comparing, [[A]]", None, "A", "line_tail"),
    (PW, "Assistant B follows the instructions better. [[B]]", None, "B", "line_tail"),
    (PW, 'Text {"rationale": "old", "verdict": "A"}\nOn reflection:\nVerdict: B', None, "B", "line_tail"),
    (PW, "Arena-Hard style.\nMy final verdict is: [[B>>A]]", None, "B", "line_tail"),
    (PW, "Close call. [[A>B]]", None, "A", "line_tail"),
    (PW, "Same quality. [[A=B]]", None, "tie", "line_tail"),
    (PW, "See [[Wiki link]] for context.\nVerdict: B", None, "B", "line_tail"),
    (PW, "B wins.\n[[B]]\nSee also [[glossary]].", None, "B", "line_tail"),
    (PW, "Reasoning.\nVerdict: B because it is accurate", None, "B", "line_tail"),
    (PW, "Reasoning.\n\n### Final Verdict\n\n**Assistant A**", None, "A", "line_tail"),
    (PW, "Reasoning.\nVerdict:\nB", None, "B", "line_tail"),
    (
        PW,
        '<think>Maybe {"verdict": "A"}? Verdict: A</think>\n{"rationale": "r", "verdict": "B"}',
        None,
        "B",
        "structured",
    ),
    (PW, "<think>A looks better.\nVerdict: A</think>\nOn balance B.\nVerdict: B", None, "B", "line_tail"),
    # --- pairwise failures
    (
        PW,
        '<think>Draft: {"rationale": "r", "verdict": "A"}. Verdict: A',
        None,
        None,
        None,
    ),  # cut mid-reasoning
    (PW, "Reasoning.\nVerdict: A and B are about the same", None, None, None),
    (PW, "Reasoning.\n### Verdict\nIt depends on the reader.", None, None, None),
    (PW, "", None, None, None),
    (PW, "   \n  ", None, None, None),
    (PW, "I think both have merits.", None, None, None),
    (PW, '{"rationale": "A is better because', None, None, None),  # truncated
    (PW, '{"rationale": "x", "verdict": "C"}', None, None, None),  # bare C is not FastChat's [[C]]
    (PW, '{"rationale": "x", "verdict": "maybe"}', None, None, None),
    (PW, '{"rationale": "x", "verdict": 1}', None, None, None),
    (PW, '{"rationale": "only"}', None, None, None),
    (PW, "Verdict: A\nOn second thought.\nVerdict: neither really", None, None, None),  # last answer invalid
    (PW, '{"rationale": "x", "verdict": "A"}\nVerdict: unsure', None, None, None),
    # --- pointwise
    (PT, "", {"rationale": "ok", "score": 4}, "4", "structured"),
    (PT, '{"rationale": "ok", "score": 3}', None, "3", "structured"),
    (PT, '{"rationale": "ok", "score": 5.0}', None, "5", "structured"),
    (PT, '{"rationale": "ok", "score": "4"}', None, "4", "structured"),
    (PT, '{"rationale": "ok", "score": "4/5"}', None, "4", "structured"),
    (PT, '{"rationale": "ok", "rating": 2}', None, "2", "structured"),
    (PT, 'Assessment.\n```json\n{"rationale": "ok", "score": 2}\n```\nDone.', None, "2", "json_tail"),
    (PT, "Clear and fluent.\nScore: 4", None, "4", "line_tail"),
    (PT, "Clear and fluent.\nScore: 4/5", None, "4", "line_tail"),
    (PT, "Clear and fluent.\nScore: 4.0", None, "4", "line_tail"),
    (PT, "Clear and fluent.\n**Score:** 3 out of 5", None, "3", "line_tail"),
    (PT, "Clear and fluent.\nFinal score: 5 (excellent)", None, "5", "line_tail"),
    (PT, "Explanation.\nRating: [[4]]", None, "4", "line_tail"),
    (PT, "Coherence score: 2\nOverall score: 3", None, "3", "line_tail"),
    (PT, "The candidate earns [[1]]", None, "1", "line_tail"),
    (PT, '{"rationale": "ok", "score": "4 (minor lapses)"}', None, "4", "structured"),
    (PT, "Assessment.\n## Score\n3/5", None, "3", "line_tail"),
    (PT, "<think>Score: 2? No.</think>Final answer.\nScore: 4", None, "4", "line_tail"),
    (PT, '{"rationale": "ok", "score": 6}', None, None, None),
    (PT, '{"rationale": "ok", "score": 0}', None, None, None),
    (PT, '{"rationale": "ok", "score": 4.5}', None, None, None),
    (PT, '{"rationale": "ok", "score": "8/10"}', None, None, None),
    (PT, '{"rationale": "ok", "score": true}', None, None, None),
    (PT, '{"rationale": "ok", "score": null}', None, None, None),
    (PT, '{"rationale": "ok", "score": "high"}', None, None, None),
    (PT, "Score: 7", None, None, None),
    (PT, "Score: 4/10", None, None, None),
    (PT, "Score: -1", None, None, None),
    (PT, '{"rationale": "The summary is', None, None, None),
    (PT, "", None, None, None),
    (PT, "It is a decent summary.", None, None, None),
]


def _ids() -> list[str]:
    return [f"{i}-{c[0][:5]}-{(c[1] or str(c[2]))[:30]}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize(("schema", "text", "structured", "value", "method"), CASES, ids=_ids())
def test_reply_table(
    schema: str, text: str, structured: dict[str, Any] | None, value: str | None, method: str | None
) -> None:
    parsed = parse_reply(schema, text, structured)
    if value is None:
        assert not parsed.ok, parsed
        assert parsed.error, "a failure must say why"
        assert parsed.value is None and parsed.method is None
    else:
        assert parsed.ok, parsed.error
        assert parsed.value == value
        assert parsed.method == method
        assert parsed.error is None
        if schema == PT:
            assert parsed.score == float(value)


def test_rationales_are_kept() -> None:
    p = parse_reply(PW, '{"rationale": "B names the right minister.", "verdict": "B"}', None)
    assert p.rationale == "B names the right minister."
    p = parse_reply(PT, "The summary is clear.\nIt misses one fact.\nScore: 4", None)
    assert p.rationale == "The summary is clear.\nIt misses one fact."
    p = parse_reply(PT, '{"explanation": "short", "score": 2}', None)
    assert p.rationale == "short"


def test_error_messages_name_the_problem() -> None:
    assert "outside 1..5" in (parse_reply(PT, '{"score": 9}', None).error or "")
    assert "not an integer" in (parse_reply(PT, '{"score": 3.5}', None).error or "")
    assert "1..5 scale" in (parse_reply(PT, "Score: 8/10", None).error or "")
    assert "truncated" in (parse_reply(PW, '{"rationale": "abc', None).error or "")
    assert "empty" in (parse_reply(PW, "", None).error or "")
    assert "'maybe'" in (parse_reply(PW, '{"verdict": "maybe"}', None).error or "")


def test_valid_structured_output_wins_over_text() -> None:
    p = parse_reply(PW, "Verdict: A", {"rationale": "r", "verdict": "B"})
    assert (p.value, p.method) == ("B", "structured")


def test_invalid_structured_output_falls_back_to_text() -> None:
    p = parse_reply(PW, '{"rationale": "r", "verdict": "A"}', {"verdict": "nonsense"})
    assert (p.ok, p.value) == (True, "A")
    p = parse_reply(PW, "no answer here", {"verdict": "nonsense"})
    assert not p.ok
    assert p.error is not None and "structured output" in p.error and "nonsense" in p.error
    p = parse_reply(PT, "", {"unrelated": 1})
    assert not p.ok and "no answer field" in (p.error or "")


def test_unknown_schema_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown schema"):
        parse_reply("verdict", "Verdict: A", None)


def test_only_the_tail_of_a_huge_reply_is_scanned() -> None:
    head = '{"verdict": "A"} ' + "x" * (MAX_SCAN + 10)
    p = parse_reply(PW, head + '\n{"rationale": "r", "verdict": "B"}', None)
    assert (p.value, p.method) == ("B", "json_tail")
    assert not parse_reply(PW, head, None).ok  # the early answer is out of reach, not guessed


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("A", "A"),
        ("b", "B"),
        ("[[A]]", "A"),
        ("[[C]]", "tie"),
        ("C", None),
        ("Assistant B", "B"),
        ("Output (a)", "A"),
        ("candidate a", "A"),
        ("Summary B", "B"),
        ("**A**", "A"),
        ('"tie"', "tie"),
        ("Tie.", "tie"),
        ("equally good", "tie"),
        ("A or B", None),
        ("A>B", "A"),
        ("[[B>>A]]", "B"),
        ("a<b", "B"),
        ("[[A=B]]", "tie"),
        ("A>A", None),
        ("AB", None),
        ("first", None),
        ("", None),
    ],
)
def test_choice_synonyms(raw: str, expected: str | None) -> None:
    assert normalise_choice(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(4, 4), (4.0, 4), ("4", 4), (" 4 / 5 ", 4), ("4 out of 5", 4), ("[[3]]", 3), ("5.00", 5)],
)
def test_score_forms(raw: Any, expected: int) -> None:
    assert normalise_score(raw) == (expected, None)


@pytest.mark.parametrize("raw", [0, 6, 4.5, "4.5", "9/10", "x", True, None, float("nan"), [], "3 stars"])
def test_score_rejects(raw: Any) -> None:
    n, why = normalise_score(raw)
    assert n is None and why


# ---------------------------------------------------------------- clauses

IDS = ("coherence.1", "coherence.2", "coherence.3")


def _clauses(text: str, structured: dict[str, Any] | None = None) -> ParsedVerdict:
    return parse_reply(CL, text, structured, clause_ids=IDS)


def test_clauses_structured() -> None:
    p = _clauses(
        "",
        {
            "rationale": "overall",
            "clauses": [
                {"id": "coherence.1", "rationale": "ordered", "met": True},
                {"id": "coherence.2", "rationale": "dangling 'he'", "met": False},
                {"id": "coherence.3", "rationale": "fine", "met": True},
            ],
        },
    )
    assert p.ok and p.method == "structured" and not p.warnings
    assert p.clauses == {
        "coherence.1": (True, "ordered"),
        "coherence.2": (False, "dangling 'he'"),
        "coherence.3": (True, "fine"),
    }
    assert (p.value, p.score, p.rationale) == ("2/3", pytest.approx(2 / 3), "overall")


def test_clauses_missing_unknown_and_invalid_are_reported() -> None:
    p = _clauses(
        '{"rationale": "r", "clauses": [{"id": "coherence.1", "met": "yes", "rationale": "a"},'
        ' {"id": "coherence.9", "met": false, "rationale": "b"},'
        ' {"id": "coherence.3", "met": "perhaps", "rationale": "c"}]}'
    )
    assert p.ok
    assert p.clauses == {"coherence.1": (True, "a"), "coherence.2": (None, None), "coherence.3": (None, "c")}
    text = " | ".join(p.warnings)
    assert "coherence.2" in text and "met=None" in text
    assert "ignored unknown clause id(s) coherence.9" in text
    assert "coherence.3='perhaps'" in text
    assert (p.value, p.score) == ("1/3", 1.0)  # 1 met of 3 asked; share among the 1 answered


def test_clauses_mapping_form_and_lines() -> None:
    p = _clauses('{"clauses": {"coherence.1": true, "coherence.2": {"met": false, "rationale": "x"}}}')
    assert p.ok and p.clauses["coherence.1"] == (True, None) and p.clauses["coherence.2"] == (False, "x")
    p = _clauses("Reasoning.\ncoherence.1: met\n- coherence.2: not met (pronoun)\n**coherence.3**: NOT MET")
    assert p.ok and p.method == "line_tail"
    assert p.clauses == {
        "coherence.1": (True, None),
        "coherence.2": (False, "pronoun"),
        "coherence.3": (False, None),
    }


def test_clauses_nothing_answered_fails() -> None:
    p = _clauses('{"rationale": "r", "clauses": []}')
    assert not p.ok and "no expected clause" in (p.error or "")
    assert p.clauses == dict.fromkeys(IDS, (None, None))
    assert not _clauses('{"rationale": "r", "clauses": "all met"}').ok
    assert not _clauses("The summary is fine.").ok


def test_clauses_later_answers_override_echoed_ones() -> None:
    echoed = "The candidate says:\ncoherence.1: met\ncoherence.2: met\n"
    real = '{"rationale": "r", "clauses": [{"id": "coherence.1", "met": false, "rationale": "x"}]}'
    p = _clauses(echoed + real)
    assert p.clauses["coherence.1"] == (False, "x")
    assert p.clauses["coherence.2"] == (None, None)  # the echoed line before the answer does not count
    p = _clauses('{"clauses": [{"id": "coherence.1", "met": true}]}\nCorrection:\ncoherence.1: not met')
    assert p.method == "line_tail" and p.clauses["coherence.1"] == (False, None)


def test_clauses_without_expected_ids_take_what_was_answered() -> None:
    p = parse_reply(CL, '{"clauses": [{"id": "x.1", "met": true}, {"id": "x.2", "met": false}]}', None)
    assert p.ok and p.clauses == {"x.1": (True, None), "x.2": (False, None)} and p.value == "1/2"


# ---------------------------------------------------------------- hostile shapes stay cheap

WALLS = {
    "unclosed braces": "{ unclosed " * 10_000,
    "nested keys": '{"k": ' * 20_000,
    "deep object": '{"k": ' * 3_000 + "1" + "}" * 3_000,
    "code": "int f() { if (x) { return 1; } }\n" * 3_000,
    "braces in strings": '{"a": 1, "b": [{"c": "}"}]} and\n' * 3_000,
    "verdict lines": 'Verdict: A [[A]] {"verdict": "A"}\n' * 3_000,
    # shapes that make chained optional whitespace in a regex backtrack
    "spaced key": "Verdict " + " " * 20_000 + "x",
    "spaced heading": "Verdict:\n" + " " * 20_000,
    "spaced brackets": "[[" + " " * 20_000 + "x",
    "spaced fence": "```json\n" + " " * 20_000 + "x",
}


@pytest.mark.parametrize("wall", list(WALLS), ids=list(WALLS))
def test_an_echoed_wall_is_parsed_quickly_and_the_real_answer_wins(wall: str) -> None:
    # the first parser scanned quadratically (over a minute of CPU on the first wall); now well under
    # a second. CPU time of this thread, not wall time: on a loaded machine the wall clock counts
    # other processes' turns too, while a quadratic scan still costs tens of CPU seconds here.
    start = time.thread_time()
    p = parse_reply(PW, WALLS[wall] + '\n{"rationale": "r", "verdict": "B",}', None)
    q = parse_reply(PW, WALLS[wall] + "\nVerdict: tie", None)
    r = parse_reply(PW, WALLS[wall], None)
    assert time.thread_time() - start < 5
    assert (p.value, p.method, q.value, q.method) == ("B", "json_tail", "tie", "line_tail")
    assert r.ok == (wall == "verdict lines")
