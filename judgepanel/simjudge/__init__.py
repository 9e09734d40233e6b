"""The simulated judge: a transparent lexical heuristic that answers judge prompts offline.

Everything it produces is labelled simulated: `model_returned` is `sim/<model>`, the fingerprint
is `judgepanel-sim-v1`, and every rationale starts with `[simulated]`. The same brain answers for
the in-process `sim` provider (`judgepanel.providers.sim_provider`) and for the fake
OpenAI/Anthropic server (`judgepanel.fake.server`); it lives beside both, in neither, and knows
nothing of providers, HTTP or the store: messages in, a `SimReply` out.

How it reads a prompt. The bundled templates put these tags in the final user message, and the
LAST occurrence of each is the real one (an item may quote the tags itself)::

    <source>…</source>              optional context (the article)
    <candidate_a>…</candidate_a>    pairwise, front slot
    <candidate_b>…</candidate_b>    pairwise, back slot
    <candidate>…</candidate>        pointwise and clause prompts
    <clause id="coherence.2">…</clause>   one per clause to check

A custom template need not use them, so without the tags the simulator reads the layouts people
write (`read_layout`): a pair of its own tags that differ only in the slot (`<summary_a>` /
`<summary_b>`, `<response1>` / `<response2>`), or a pair of labelled sections whose labels differ
only in the slot (`Summary A:` / `Summary B:`, `Response 1` / `Response 2`, `[The Start of
Assistant A's Answer]` … `[The End of Assistant A's Answer]`); a single candidate under a label
such as `Summary:`, `Response:` or `Answer:`; the source under `Article:`, `Source:`, `Document:`,
`Context:`, `Question:` …. A section runs to the next label, an `[The End of …]` line, or the
template's own instructions (a paragraph that asks for a verdict or a score). Without a response
format (structured output), the question is pairwise when it shows two slots or asks for `[[A]]`
/ `Verdict: A`, else pointwise. Found nothing: the reply says so ("I could not find …") as a tie
or the lowest score, which the parser reads.

How it judges. A candidate's quality q ∈ [0, 1] is

    q = 0.45·support + 0.25·coverage + 0.20·distinct + 0.10·length

with `support` the share of the candidate's word bigrams found in the source (faithfulness),
`coverage` the share of the source's ten most frequent content words the candidate mentions
(relevance), `distinct` the share of distinct word trigrams (1 − repetition), and `length` 1 for
20–120 words, n/20 below and 120/n above (without a source: support 0.75, coverage 0.6). On the
bundled SummEval sample q has Spearman ρ ≈ 0.3 with the experts' mean score: a judge that agrees
"somewhat" with humans. Each simulated model sees q through its own fixed noise N(0, noise²)
seeded by model and candidate text (so it judges the same text the same way in AB and BA order,
and different models disagree a little), plus per-request noise N(0, (noise/4)²), giving q̃. Then:

* pairwise: A if q̃_A − q̃_B > 0.01, B if < −0.01, else tie; then with probability
  `position_bias` the answer is replaced by the back slot, B: the bias moves that much probability
  mass to whatever is shown second, which a swapped AB/BA design measures;
* pointwise: score = clip(round(lo + (hi − lo)·(q̃ − q_low)/q_span), lo, hi) on the scale the
  prompt's first line names ("on a scale from lo (worst) to hi (best)"; 1..5 when it names none),
  with q_low = 0.70 and q_span = 0.28 unless the spec sets them: a dialogue reply shares few word
  pairs with its context, so its q sits far below a summary's and needs a lower window
  (`sim:a?q_low=0.3&q_span=0.3`) to use more than the bottom level;
* clauses: each clause is checked against the feature its wording names (repetition → distinct,
  source/fact/hallucination/consistent → support, main/key/cover/relevant → coverage,
  length/concise/brief → length, else q) and is met when that feature seen through the model's
  clause noise clears the feature's threshold (distinct 0.95, support 0.85, coverage 0.6,
  length 0.9, q 0.85). A clause that names none of these features is *vague*: each model reads
  it through `VAGUE_NOISE` (4) times its usual noise, so simulated judges split on vague clauses
  and agree more once a clause names the property to check — the effect a rubric repair can show;
* editor requests (`clause_rewrite`, `dimension_split`, see `protocol.editor`): the simulated
  editor appends to a vague clause the property its dimension's name points to (source support
  for consistency, else the source's main points), restates a specific clause unchanged in
  effect, and splits a dimension into one clause per property; every reason starts with
  `[simulated editor]`. With probability `keep_rate` it returns the clause unchanged.
  `editor_sprawl=N` makes it an editor that does not stop: a rewrite N characters long, a split
  into N clauses (to test the bounds of `protocol.editor`).
  Instruction revisions (`instructions_revision`, the alignment editor of `protocol.align`): the
  simulated editor compares the judge's and the humans' scores on the examples shown; when the
  humans scored lower on average it appends "Be strict: …" to the instructions, higher "Be
  lenient: …", equal: the instructions come back unchanged (reason `[simulated editor]`).
  Checker requests (`clause_checker`) get a deterministic proposal, good or deliberately bad
  (see `_checker`), so the agreement threshold has a mapping to keep and one to refuse.

Following instructions and examples (issue 22 §3; pointwise and pairwise prompts only, labelled:
the rationale then reads `[simulated] followed: emphasis=support; strict; calibrated on 6
examples. …`). Instructions are the system messages and the final user message's text BEFORE the
item begins: before the first `<source>` / `<candidate>` / `<candidate_a>` tag, or the first tag or
label line naming a source or a candidate (`Article:`, `Summary A:`, `<document>` …), skipping
example blocks. Text at or after that point, i.e. anything inside the item, never steers the judge
(prompt injection); a template that states its instructions only after the item is not followed.
It understands, case-insensitively:

* an emphasis: `focus on`, `pay (most|particular|…) attention to`, `prioritise`, `emphasise`,
  `emphasis on`, `above all`, `most important(ly)`, followed in the same sentence by a feature's
  word (the first one after the phrase counts): support (support, faithful, factual, fact,
  consistent, hallucinat…, accura…, grounded, contradict, source), coverage (cover, main/key
  point, main idea, relevan…, essential, important points/information, key information),
  distinct (repeti…, repeat, redundan…, duplicat…, coheren…, fluen…, readab…: coherence has no
  feature of its own here, repetition stands in for it), length (length, concise, brief, short,
  long, verbose, wordy). Each emphasised feature's weight in q is doubled and the weights
  renormalised to sum 1: "focus on support" gives q = (0.90·support + 0.25·coverage +
  0.20·distinct + 0.10·length) / 1.45. Pairwise verdicts use the same reweighted q;
* strictness: `be (very|more) strict|harsh|severe|demanding|critical`, `judge|score|grade|rate
  strictly|harshly|conservatively`, `strict judge|grader|standard`, `give|award 4 or 5 only
  when|if …`, `reserve (a score of) 5 …`; leniency: `be lenient|generous|forgiving`, `score
  leniently|generously`, `benefit of the doubt`, `lenient judge|grader`. Strict moves every
  unrounded pointwise score one level down (the window's q_low up by q_span/(hi − lo)), lenient
  one level up; both together cancel. Negations ("do not be strict") are not understood, nor are
  score descriptions ("a score of 3 means …", "3: …"): every rubric template states those, and
  reading them would change the replies to every bundled prompt;
* worked examples, before the item, in either format (the few-shot template of `align run` emits
  the tagged one; its texts should be `neutralise`d like the item's)::

      <example>                               Example 1:
      <source>…</source>   (optional)         Article: …       (optional)
      <candidate>…</candidate>                Summary: …       (any candidate label)
      <score>4</score>                        Score: 4
      </example>

  (`<example n="1">` is accepted, the label may also be `<label>` / `Rating:`; a plain example
  with no label line is the text alone; a plain section without a final `Score:` line is no
  example.) Example blocks are cut out of the prompt before the item is read, so the item is
  still the last `<candidate>` / the layout `read_layout` finds. Pointwise: each example with a
  numeric label on the prompt's scale gets q (reweighted as above) from its candidate and its own
  source, else the item's source; the q̃ → score line is then fitted to them: least squares of
  label on q, its slope clipped to [¼, 4] × the default slope (hi − lo)/q_span, through the
  examples' mean point; with fewer than 2 distinct labels, (near-)equal qs or a fitted slope ≤ 0,
  the default slope through the mean point (the window shifted so the examples' mean q maps to
  their mean label). score = clip(round(intercept + slope·q̃)), then strictness as above. Pairwise
  examples (labels A/B) are ignored and the rationale says so.

A prompt with neither instructions the simulator understands nor examples gets exactly the reply
it got before this behaviour existed (`tests/test_simjudge_follow.py` checks ~200 stored replies).

Reply shape. With structured output requested the reply is the JSON object. Otherwise, with
probability `prose_rate` it is prose ending in `Verdict: A` / `Score: 4` (clause replies end
with one `<id>: met` / `<id>: not met` line per clause), else the bare JSON. With probability `parse_error_rate` the
reply is unparseable: a refusal-like sentence or JSON cut off at the token limit.

All randomness is drawn from a seed hashed from model, parameters, messages and reply kind, so the
same request always gets the same reply.

Boundary: this package answers one request (`simulate`, here); its parts are `reply` (the kinds,
knobs and reply type), `reading` (what a prompt holds), `scoring` (a candidate's features),
`following` (instructions and examples), `verdicts` (the judge's answers and rationale text) and
`editor` (the editor's answers).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

# re-exported: the providers and the fake server import it from here
from judgepanel.config import SIM_FINGERPRINT as SIM_FINGERPRINT
from judgepanel.simjudge.editor import _align, _checker, _keep, _rewrite, _split, _sprawl
from judgepanel.simjudge.following import Guidance, read_guidance
from judgepanel.simjudge.reading import content_text, final_user_text, infer_kind, last_tag
from judgepanel.simjudge.reply import (
    ALIGN,
    CHECKER,
    CLAUSES,
    PAIRWISE,
    POINTWISE,
    REWRITE,
    SPLIT,
    ReplyStyle,
    SimReply,
    SimSettings,
    count_tokens,
    request_seed,
)
from judgepanel.simjudge.verdicts import _clauses, _pairwise, _pointwise

_GARBLED = (
    "I'm sorry, but I can't determine an answer from the text provided.",
    "Both texts have strengths and weaknesses; it depends on what the reader values.",
)


def simulate(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    schema_name: str | None = None,
    params: Mapping[str, Any] | None = None,
    structured: bool = False,
) -> SimReply:
    """Answer one judge prompt. `structured` means the caller asked for schema-constrained output
    (OpenAI `response_format`, Anthropic forced tool): the reply is then the bare JSON object."""
    params = dict(params or {})
    settings = SimSettings.from_params(params)
    text = final_user_text(messages)
    kind = infer_kind(schema_name, text)
    guidance = Guidance()
    if kind in (POINTWISE, PAIRWISE):
        guidance, read = read_guidance(messages, text)
        if read != text:  # examples cut out: the item is read (and its kind told) without them
            text = read
            kind = infer_kind(schema_name, text)
            kind = kind if kind in (POINTWISE, PAIRWISE) else POINTWISE
    rng = random.Random(request_seed(model, params, messages, kind))
    source = last_tag(text, "source")
    if kind == ALIGN:
        answer = _align(text)
    elif kind == CHECKER:
        answer = _checker(text)
    elif kind in (REWRITE, SPLIT):
        answer = _rewrite(text) if kind == REWRITE else _split(text)
        # drawn only when asked for, so the other replies' random stream stays as it was
        if kind == REWRITE and settings.keep_rate > 0 and rng.random() < settings.keep_rate:
            answer = _keep(text)
        if settings.editor_sprawl >= 1:
            answer = _sprawl(answer, int(settings.editor_sprawl))
    else:
        if kind == CLAUSES:
            answer = _clauses(model, text, source, rng, settings)
        else:
            answer = (_pairwise if kind == PAIRWISE else _pointwise)(
                model, text, source, rng, settings, guidance
            )
    compact = json.dumps(answer, ensure_ascii=False)
    style: ReplyStyle = "json"
    finish: Literal["stop", "length"] = "stop"
    obj: dict[str, Any] | None = answer
    if rng.random() < settings.parse_error_rate:
        style, obj = "garbled", None
        if structured or rng.random() < 0.5:
            reply, finish = compact[: max(1, len(compact) // 3)], "length"
        else:
            reply = rng.choice(_GARBLED)
    elif not structured and rng.random() < settings.prose_rate:
        style, obj = "prose", None
        reply = _prose(kind, answer)
    else:
        reply = compact
    prompt_chars = sum(len(content_text(m.get("content"))) for m in messages)
    return SimReply(
        kind=kind,
        text=reply,
        structured=obj,
        style=style,
        finish_reason=finish,
        input_tokens=max(1, math.ceil(prompt_chars / 4)) + 4 * len(messages),
        output_tokens=count_tokens(reply),
    )


def _prose(kind: str, answer: dict[str, Any]) -> str:
    if kind in (REWRITE, SPLIT, CHECKER, ALIGN):
        return f"{answer['reason']}\n\n{json.dumps(answer, ensure_ascii=False)}"
    if kind == PAIRWISE:
        return f"{answer['rationale']}\n\nVerdict: {answer['verdict']}"
    if kind == POINTWISE:
        return f"{answer['rationale']}\n\nScore: {answer['score']}"
    lines = [f"{c['id']}: {'met' if c['met'] else 'not met'}" for c in answer["clauses"]]
    return "\n".join([answer["rationale"], "", *lines])
