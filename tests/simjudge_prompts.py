"""Prompts for the simulated judge's regression guard (`tests/test_simjudge_follow.py`): about two
hundred real prompts without instructions or examples (bundled templates on the SummEval sample,
and custom layouts), each asked of a few simulated models with a few settings. The digests of the
replies the simulator gave before it learned to follow instructions are stored in
`tests/data/simjudge_replies_v1.json`; regenerate them (only on purpose) with
`python -m tests.simjudge_prompts > tests/data/simjudge_replies_v1.json`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from judgepanel.datasets.summeval import parse_summeval
from judgepanel.protocol import UnitText, render_clauses, render_pairwise, render_pointwise
from judgepanel.resources import sample_path
from judgepanel.rubrics import bundled_rubric
from judgepanel.simjudge import simulate

MODELS = ("judge-a", "judge-b")
PARAMS: tuple[dict[str, Any], ...] = (
    {},
    {"position_bias": 0.2, "prose_rate": 0.5, "parse_error_rate": 0.2, "noise": 0.08},
)
LAYOUTS = (
    "Which is better?\n\nArticle:\n{src}\n\nSummary A:\n{a}\n\nSummary B:\n{b}\n\nEnd with Verdict: A or B.",
    "Source: {src}\nResponse 1: {a}\nResponse 2: {b}\n\nWhich response is better? Verdict: A or B",
    "<document>{src}</document>\n<answer-a>{a}</answer-a>\n<answer-b>{b}</answer-b>\nSay A or B.",
    "Rate the summary from 1 to 5.\n\nArticle:\n{src}\n\nSummary:\n{a}\n\nEnd with Score: N.",
)


@lru_cache(maxsize=1)
def sample_units() -> tuple[UnitText, ...]:
    """The bundled SummEval sample as the judges see it (summary + article)."""
    parsed = parse_summeval(
        sample_path("summeval_sample.jsonl.gz"), sample_path("summeval_articles_sample.jsonl.gz")
    )
    return tuple(UnitText(i.external_id, i.output, i.input) for i in parsed.items)


def guard_prompts() -> Iterator[tuple[str, list[dict[str, str]], str | None]]:
    """(label, messages, schema name) of every guarded prompt, in a fixed order."""
    rubric = bundled_rubric("summeval")
    every = sample_units()
    units = every[::4][:40]
    for n, u in enumerate(units):
        dim = ("coherence", "consistency", "fluency", "relevance")[n % 4]
        for cond in ("none", "criteria", "rubric"):
            p = render_pointwise(u, condition=cond, dimension=dim, rubric=rubric)  # type: ignore[arg-type]
            yield f"point/{u.external_id}/{cond}", p.messages, p.schema_name
        other = next(o for o in every if o.input == u.input and o.external_id != u.external_id)
        p = render_pairwise(u, other, order="AB" if n % 2 else "BA", dimension=dim, rubric=rubric)
        yield f"pair/{u.external_id}", p.messages, p.schema_name
        p = render_clauses(u, dimension=dim, rubric=rubric)
        yield f"clauses/{u.external_id}", p.messages, p.schema_name
        layout = LAYOUTS[n % len(LAYOUTS)]
        text = layout.format(src=u.input or "", a=u.output, b=other.output)
        yield f"layout/{u.external_id}", [{"role": "user", "content": text}], None


def reply_digests() -> dict[str, str]:
    """By prompt: sha256 (16 hex digits) over its replies to every model, setting and output mode."""
    out: dict[str, str] = {}
    for label, messages, schema in guard_prompts():
        h = hashlib.sha256()
        for model in MODELS:
            for params in PARAMS:
                for structured in (False, True):
                    r = simulate(model, messages, schema_name=schema, params=params, structured=structured)
                    h.update(json.dumps([r.kind, r.text, r.style, r.finish_reason, r.output_tokens]).encode())
        out[label] = h.hexdigest()[:16]
    return out


if __name__ == "__main__":
    print(json.dumps(reply_digests(), indent=0, sort_keys=True))
