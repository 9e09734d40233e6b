"""The system prompt is rendered once, not once per job (issue 20: `campaign plan` renders every
pending job's prompt): a template's text is remembered by the values of the variables it reads,
so the memo can never hand one job's text to another that differs in something the template shows."""

from __future__ import annotations

from judgepanel.protocol import templates
from judgepanel.protocol.templates import SYSTEM_TEMPLATE, UnitText, render_pointwise
from judgepanel.resources import resource_dir


def test_the_memo_is_keyed_on_what_each_template_reads() -> None:
    folder = resource_dir("prompts")
    assert templates._reads(folder, SYSTEM_TEMPLATE) == ()  # one text for every job
    reads = templates._reads(folder, "pointwise_none.v3")
    assert reads is not None and {"candidate", "dimension_name", "source"} <= set(reads)


def test_memoised_renders_equal_fresh_ones_and_differ_where_the_jobs_do() -> None:
    a = UnitText("a", "The cat sat.", "A story about a cat.", None, None)
    b = UnitText("b", "A dog ran.", "A story about a dog.", None, None)
    first = [
        render_pointwise(u, condition="none", dimension=d, rubric=None) for u in (a, b) for d in ("x", "y")
    ]
    templates._RENDERED.clear()
    again = [
        render_pointwise(u, condition="none", dimension=d, rubric=None) for u in (a, b) for d in ("x", "y")
    ]
    assert [p.messages for p in first] == [p.messages for p in again]
    assert len({p.messages[0]["content"] for p in first}) == 1  # the system prompt
    assert len({p.messages[1]["content"] for p in first}) == 4  # each item × dimension its own
    assert (
        "The cat sat." in first[0].messages[1]["content"] and "A dog ran." in first[2].messages[1]["content"]
    )
