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


def test_bundled_templates_render_from_a_plain_dict_of_the_environments_globals() -> None:
    """Each render copies the template's globals into its context: a ChainMap made that copy walk
    key by key (a seventh of preparing a job in the runner); a plain dict of the same names and
    values renders the same text as jinja's own template does."""
    from judgepanel.protocol.templates import POINTWISE_TEMPLATES, _environment, _load

    folder = resource_dir("prompts")
    item = UnitText("i1", "The cat sat.", "A long article about cats.")
    for name in (SYSTEM_TEMPLATE, POINTWISE_TEMPLATES["none"]):
        ours = _load(folder, name)
        assert type(ours.compiled.globals) is dict
        assert ours.compiled.globals == dict(_environment(folder).globals)
        jinjas = _environment(folder).from_string(ours.source)  # globals: jinja's ChainMap
        assert type(jinjas.globals) is not dict
        context = {
            "source": item.input,
            "source_label": "Article",
            "candidate_label": "Summary",
            "a_candidate": "a Summary",
            "relation": "summarises",
            "dimension": None,
            "dimension_name": "coherence",
            "candidate": item.output,
            "scale_low": 1,
            "scale_high": 5,
            "score_options": "1 | 2 | 3 | 4 | 5",
        }
        assert ours.compiled.render(**context) == jinjas.render(**context)
    assert render_pointwise(item, condition="none", dimension="coherence", rubric=None).messages[1]["content"]
