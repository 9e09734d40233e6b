"""Issue 29 §3: a clause checker cannot hang. Regex checkers run in the `regex` engine under a
hard time limit per search; inline flags and other `(?…)` groups are refused; patterns that
backtrack on long runs of one character are refused when proposed; a search that runs out of
time answers nothing (the clause is left to the judge) and the pattern is not searched again."""

from __future__ import annotations

import pytest

from judgepanel.protocol import checkers as ck
from judgepanel.runner.prepare import checker_answer


@pytest.mark.parametrize(
    "pattern",
    [
        ".*.*.*.*.*.*=",  # polynomial of degree 6: the first pattern
        "(?s).+.+.+.+.+.+.+.+X",  # an inline flag (and polynomial)
        "(?x)( a + ) + b",  # verbose mode hid a nested quantifier from the structure rule
        "(?i)summary",
        "(?s:.)+x",
        "(?P<word>\\w+)",
        "(?>a+)b",
        ".*.*.*.*.*.*[=;]",
        "a*a*a*a*a*a*[bc]",
        "\\w+@\\w+\\.com",  # quadratic: 0.4 s and more on 20,000 characters
        "a{e<=1}",  # fuzzy matching in `regex`, a literal in `re`: refused, not read two ways
        "x}",
    ],
)
def test_patterns_that_could_hang_or_read_two_ways_are_refused(pattern: str) -> None:
    with pytest.raises(ck.CheckerError) as info:
        ck.validate("regex", {"pattern": pattern, "expect": "match"})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "pattern",
    [
        "\\bsummary\\b",
        "^\\s*(?:yes|no)\\b",
        "\\d{2,4}",
        "\\{x\\}",
        "In summary, .* concludes",
        "[A-Z][a-z]+ said",
    ],
)
def test_ordinary_patterns_are_kept_and_search_as_re_does(pattern: str) -> None:
    import re

    checker = ck.validate("regex", {"pattern": pattern, "expect": "match"})
    for text in ("In summary, the council concludes.", "Yes, 2024 {x}", "Anna said no", "nothing here"):
        assert checker.check(text) == (re.search(pattern, text, re.IGNORECASE) is not None), (pattern, text)


def test_a_search_that_runs_out_of_time_answers_nothing_and_is_not_run_again() -> None:
    """A pattern that passes the probes but backtracks on a crafted text (`b`, not a probe's
    filler, around one `c`): before, `re` searched it for ever and a kept checker hung every
    later clause campaign. Now the search stops at the limit, the checker gives no answer for
    this text, and the pattern is not searched again in this process."""
    checker = ck.validate("regex", {"pattern": "[bk]*[bk]*[bk]*[bk]*[bk]*[bk]*c$", "expect": "match"})
    crafted = "b" * 5000 + "c" + "b" * 5000
    with pytest.raises(ck.CheckerTimeout):
        checker.check(crafted)
    met, note = checker_answer(checker, "bbbc")  # not searched again: no answer
    assert met is None and "ran past" in note
    fine = ck.validate("regex", {"pattern": "[bk]+c$", "expect": "match"})
    assert checker_answer(fine, "bbbc") == (True, f"checker {fine.describe()}")
