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
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any, Literal

# re-exported: the providers and the fake server import it from here
from judgepanel.config import SIM_FINGERPRINT as SIM_FINGERPRINT

PAIRWISE = "pairwise_verdict"
POINTWISE = "pointwise_verdict"
CLAUSES = "clause_verdicts"
REWRITE = "clause_rewrite"
CHECKER = "clause_checker"
SPLIT = "dimension_split"
ALIGN = "instructions_revision"
REPLY_KINDS = (PAIRWISE, POINTWISE, CLAUSES, REWRITE, SPLIT, CHECKER, ALIGN)
# a clause that names no property the simulated judges can read is vague: each model reads it
# through this many times its usual noise, so judges split on it (see `_clauses`)
VAGUE_NOISE = 4.0

ReplyStyle = Literal["json", "prose", "garbled"]

_WORD = re.compile(r"[a-z0-9]+")
_SCALE = re.compile(r"on a scale from (\d+) \(worst\) to (\d+) \(best\)")
_CLAUSE = re.compile(r"<clause\s+id\s*=\s*[\"']([^\"']+)[\"']\s*>(.*?)</clause>", re.DOTALL)
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "but",
        "not",
        "you",
        "all",
        "any",
        "can",
        "had",
        "her",
        "was",
        "one",
        "our",
        "out",
        "has",
        "him",
        "his",
        "how",
        "its",
        "may",
        "new",
        "now",
        "old",
        "see",
        "two",
        "who",
        "did",
        "get",
        "let",
        "put",
        "say",
        "she",
        "too",
        "use",
        "that",
        "with",
        "have",
        "this",
        "will",
        "your",
        "from",
        "they",
        "been",
        "were",
        "said",
        "each",
        "which",
        "their",
        "there",
        "what",
        "about",
        "would",
        "make",
        "like",
        "into",
        "than",
        "them",
        "then",
        "these",
        "some",
        "could",
        "other",
        "more",
        "very",
        "after",
        "also",
        "just",
        "over",
        "such",
        "only",
        "most",
        "when",
        "where",
        "while",
    ]
)


@dataclass(frozen=True)
class SimSettings:
    """The simulator's knobs, read from spec / request parameters of the same names."""

    position_bias: float = 0.0
    noise: float = 0.05
    parse_error_rate: float = 0.0
    prose_rate: float = 0.1
    q_low: float = 0.70  # pointwise: the q̃ at which the lowest level is reached
    q_span: float = 0.28  # … and how much more q̃ the highest level needs
    error_rate: float = 0.0
    keep_rate: float = 0.0  # editor: the share of rewrite requests answered with the clause as it was
    latency: float = 0.0
    jitter: float = 0.0
    # editor replies: a rewrite this many characters long, a split into this many clauses
    editor_sprawl: float = 0.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SimSettings:
        defaults = cls()
        values = {
            name: float(params[name]) if name in params else getattr(defaults, name)
            for name in cls.__dataclass_fields__
        }
        return cls(**values)


@dataclass(frozen=True)
class Quality:
    """The lexical features one candidate is judged on, and their weighted sum `score`."""

    support: float
    coverage: float
    distinct: float
    length: float
    words: int

    @property
    def score(self) -> float:
        return 0.45 * self.support + 0.25 * self.coverage + 0.20 * self.distinct + 0.10 * self.length


@dataclass(frozen=True)
class SimReply:
    """One simulated reply: the text as a model would send it, and the JSON object behind it."""

    kind: str
    text: str
    structured: dict[str, Any] | None  # set when the text is exactly this JSON object
    style: ReplyStyle
    finish_reason: Literal["stop", "length"]
    input_tokens: int
    output_tokens: int


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@lru_cache(maxsize=8192)
def quality(candidate: str, source: str | None) -> Quality:
    """The transparent heuristic in the module docstring."""
    words = _words(candidate)
    bigrams = list(pairwise(words))
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    if source is None:
        support, coverage = 0.75, 0.6
    else:
        src = _source_profile(source)
        support = sum(b in src.bigrams for b in bigrams) / len(bigrams) if bigrams else 0.0
        present = set(words)
        coverage = sum(w in present for w in src.key_words) / len(src.key_words) if src.key_words else 0.0
    distinct = len(set(trigrams)) / len(trigrams) if trigrams else 1.0
    n = len(words)
    length = n / 20 if n < 20 else (1.0 if n <= 120 else 120 / n)
    return Quality(support, coverage, distinct, length, n)


@dataclass(frozen=True)
class _Source:
    bigrams: frozenset[tuple[str, str]]
    key_words: tuple[str, ...]


@lru_cache(maxsize=1024)
def _source_profile(source: str) -> _Source:
    words = _words(source)
    counts = Counter(w for w in words if len(w) >= 3 and w not in _STOP)
    return _Source(frozenset(pairwise(words)), tuple(w for w, _ in counts.most_common(10)))


def last_tag(text: str, tag: str) -> str | None:
    """The content of the LAST `<tag>…</tag>` in `text` (the template's own, after any quoted ones)."""
    close = f"</{tag}>"
    end = text.rfind(close)
    if end < 0:
        return None
    start = text.rfind(f"<{tag}>", 0, end)
    if start < 0:
        return None
    return text[start + len(tag) + 2 : end].strip()


def clauses_in(text: str) -> list[tuple[str, str]]:
    """Every `<clause id="…">…</clause>`, in order; a repeated id keeps its last text."""
    found: dict[str, str] = {}
    for cid, body in _CLAUSE.findall(text):
        found.pop(cid, None)
        found[cid] = body.strip()
    return list(found.items())


# ---- reading custom layouts (see the module docstring) ------------------------------------------

_SLOT = {"a": "A", "b": "B", "1": "A", "2": "B"}
# `<summary_a>`, `<response-2>`, `<answer1>`: a tag whose name ends in a slot
_SLOT_NAME = re.compile(r"(?P<stem>[a-z][\w-]*?)[_-]?(?P<slot>[ab12])")
# a label line: up to four words, the slot, a short tail (`'s Answer`), then a colon, a closing
# bracket or the end of the line; `rest` is any text after the colon on the same line
_HEAD = re.compile(
    r"^[ \t]*[#>*_\[(-]*[ \t]*(?P<noun>(?:[A-Za-z][\w'-]*[ \t]+){1,4}?)\(?(?P<slot>[AB12]|(?<=\()[ab])\)?"
    r"(?P<tail>(?:'s)?(?:[ \t]+[A-Za-z][\w-]*){0,2})[ \t]*[\])*_]*[ \t]*(?:[:：][ \t]*(?P<rest>.*))?$",
    re.M,
)
_END = re.compile(r"^[ \t]*[#>*_\[(-]*[ \t]*(?:the[ \t]+)?end[ \t]+of\b", re.I)
_CANDIDATE_WORDS = (
    "candidate", "summary", "response", "answer", "reply", "output", "completion", "text", "translation",
    "assistant", "model", "option", "essay", "story", "generation",
)  # fmt: skip
_SOURCE_WORDS = (
    "source", "article", "document", "context", "question", "input", "passage", "prompt", "instruction",
    "conversation", "dialogue", "dialog", "request", "task", "query", "original", "news",
)  # fmt: skip
# a single label line: `Article:` (text may follow the colon), `[Article]` or `### Article`
_LABEL = re.compile(
    r"^[ \t]*(?:[#>*_(-]*[ \t]*(?P<noun>[A-Za-z][\w'-]*(?:[ \t]+[A-Za-z][\w'-]*){0,4}?)[ \t]*[)*_]*[ \t]*"
    r"[:：][ \t]*(?P<rest>.*)|\[[ \t]*(?P<bracketed>[A-Za-z][\w' -]{0,40}?)[ \t]*\]"
    r"|#{1,6}[ \t]+(?P<heading>[A-Za-z][\w' -]{0,40}?)[ \t]*)$",
    re.M,
)


def _label_words(m: re.Match[str]) -> list[str]:
    return (m.group("noun") or m.group("bracketed") or m.group("heading") or "").lower().split()


# the template's own instructions: a paragraph that asks for an answer format
_ASKS = re.compile(
    r"\bverdict\b|\[\[|\bwinner\b|\"rationale\"|\bscore\b|\brating\b|\brate\b|\banswer with\b|\brespond with\b"
    r"|\bwhich (?:one|summary|response|answer|text|candidate)\b|\bbetter\b.*\?|\bjudge\b|\bevaluate\b",
    re.I,
)
_PAIRWISE_ASK = re.compile(r"\[\[\s*A\s*\]\]|verdict\W{0,3}A\b|\"A\"\s*(?:,|or)\s*\"B\"|\bA or B\b", re.I)


@dataclass(frozen=True)
class Layout:
    """What the simulator found in a prompt: the candidates (two for a pair) and the source."""

    candidates: tuple[str, ...]
    source: str | None


def _until_instructions(lines: list[str]) -> str:
    """The text of one section, `lines[0]` being what follows its label on the label's line. It
    runs to an `[The End of …]` line, or to a blank line after which the template's instructions
    or another label begin; a section that starts on its label's line (`Response 1: …`) ends at
    the next label line too."""
    inline = bool(lines and lines[0].strip())
    out: list[str] = []
    blank = False
    for line in lines:
        if _END.match(line):
            break
        labelled = bool(_LABEL.match(line) or _HEAD.match(line))
        if out and (blank or inline) and line.strip() and (labelled or (blank and _ASKS.search(line))):
            break
        if line.strip() or out:
            blank = not line.strip()
            out.append(line)
    return "\n".join(out).strip()


def _slot_heads(text: str) -> list[tuple[str, str, int, int, str]]:
    """(key, slot, start, end, rest) of every label line naming a slot; `key` is the label without
    the slot, so `Summary A:` and `Summary B:` share it."""
    heads = []
    for m in _HEAD.finditer(text):
        if _END.match(m.group(0)):
            continue  # `[The End of Assistant A's Answer]` closes a section, it opens none
        noun = " ".join(m.group("noun").lower().split())
        if not any(w in noun.split() for w in (*_CANDIDATE_WORDS, "the", "of")):
            continue
        key = f"{noun}|{' '.join(m.group('tail').lower().split())}"
        heads.append((key, _SLOT[m.group("slot").lower()], m.start(), m.end(), m.group("rest") or ""))
    return heads


def _pair_from_heads(text: str) -> tuple[str, str] | None:
    heads = _slot_heads(text)
    for j in range(len(heads) - 1, -1, -1):
        key_b, slot_b, start_b, end_b, rest_b = heads[j]
        if slot_b != "B":
            continue
        front = [h for h in heads[:j] if h[0] == key_b and h[1] == "A"]
        if not front:
            continue
        _, _, _, end_a, rest_a = front[-1]
        a_lines = [rest_a, *text[end_a:start_b].split("\n")[1:]]
        b_lines = [rest_b, *text[end_b:].split("\n")[1:]]
        a, b = _until_instructions(a_lines), _until_instructions(b_lines)
        if a and b:
            return a, b
    return None


_ANY_TAG = re.compile(r"<(/?)([A-Za-z][\w-]*)>")


def _own_tags(text: str) -> list[tuple[str, str]]:
    """(lower-cased name, body) of every `<name>…</name>`, in the order they close: an opening tag
    pairs with the first closing tag of its name after it. One pass over the tags, so an item full
    of unclosed `<br>`s costs no more than its length."""
    opened: dict[str, int] = {}
    found: list[tuple[str, str]] = []
    for m in _ANY_TAG.finditer(text):
        name = m.group(2).lower()
        if not m.group(1):
            opened.setdefault(name, m.end())
        elif name in opened:
            found.append((name, text[opened.pop(name) : m.start()].strip()))
    return found


def _own_tag(text: str, words: Sequence[str]) -> str | None:
    """The body of the LAST `<name>…</name>` whose name (split at `_` and `-`) has one of `words`."""
    found = [body for name, body in _own_tags(text) if any(w in re.split(r"[_-]", name) for w in words)]
    return found[-1] if found and found[-1] else None


def _labelled(text: str, words: Sequence[str]) -> str | None:
    """The section under the LAST label line whose words include one of `words`."""
    found = None
    for m in _LABEL.finditer(text):
        if any(w in _label_words(m) for w in words):
            found = m
    if found is None:
        return None
    section = _until_instructions([found.group("rest") or "", *text[found.end() :].split("\n")[1:]])
    return section or None


def read_layout(text: str, pairwise: bool) -> Layout:
    """The candidates and the source of a judge prompt, tagged or not (module docstring). A prompt
    with our candidate tags is read by the tags alone, as it always was."""
    tagged_source = last_tag(text, "source")
    if pairwise:
        a, b = last_tag(text, "candidate_a"), last_tag(text, "candidate_b")
        if a is not None and b is not None:
            return Layout((a, b), tagged_source)
    else:
        cand = last_tag(text, "candidate")
        if cand is not None:
            return Layout((cand,), tagged_source)
    source = tagged_source or _own_tag(text, _SOURCE_WORDS) or _labelled(text, _SOURCE_WORDS)
    if not pairwise:
        cand = _own_tag(text, _CANDIDATE_WORDS) or _labelled(text, _CANDIDATE_WORDS)
        return Layout((cand,) if cand else (), source)
    slots: dict[str, dict[str, str]] = {}
    for name, body in _own_tags(text):
        m = _SLOT_NAME.fullmatch(name)
        if m is not None:
            slots.setdefault(m.group("stem"), {})[_SLOT[m.group("slot")]] = body
    pair = next(((t["A"], t["B"]) for t in reversed(slots.values()) if "A" in t and "B" in t), None)
    pair = pair or _pair_from_heads(text)
    return Layout(pair if pair is not None else (), source)


def final_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def content_text(content: Any) -> str:
    """Message content as plain text: a string, or the text parts of a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part
        )
    return ""


def request_seed(
    model: str, params: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], kind: str
) -> int:
    """A 64-bit seed from everything that identifies the request."""
    blob = json.dumps(
        [model, dict(sorted(params.items())), list(messages), kind], sort_keys=True, default=str
    )
    return int.from_bytes(hashlib.blake2b(blob.encode(), digest_size=8).digest(), "big")


def _model_noise(model: str, key: str, sd: float) -> float:
    """A fixed N(0, sd²) offset for this model looking at this text: its stable 'taste'."""
    digest = hashlib.blake2b(f"{model}\x00{key}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big")).gauss(0.0, sd)


def count_tokens(text: str) -> int:
    """A rough token count (≈ 4 characters a token), enough for simulated usage figures."""
    return max(1, math.ceil(len(text) / 4))


def infer_kind(schema_name: str | None, user_text: str) -> str:
    if schema_name in REPLY_KINDS:
        return schema_name
    if "</clause_to_rewrite>" in user_text:
        return REWRITE
    if "</instructions_to_revise>" in user_text:
        return ALIGN
    if "</clause_to_check>" in user_text:
        return CHECKER
    if "</dimension_to_split>" in user_text:
        return SPLIT
    if "<clause" in user_text:
        return CLAUSES
    if "</candidate_b>" in user_text:
        return PAIRWISE
    if "</candidate>" in user_text:
        return POINTWISE
    if _PAIRWISE_ASK.search(user_text) or read_layout(user_text, pairwise=True).candidates:
        return PAIRWISE
    return POINTWISE


# ---- following the template's instructions and examples (see the module docstring) ------------

WEIGHTS: Mapping[str, float] = {"support": 0.45, "coverage": 0.25, "distinct": 0.20, "length": 0.10}
# what an emphasis names: the earliest of these stems after the emphasis phrase picks the feature
_EMPHASIS_FEATURES: tuple[tuple[str, str], ...] = tuple(
    (stem, feature)
    for feature, stems in (
        ("support", ("support", "faithful", "factual", "fact", "consisten", "hallucinat", "accura",
                     "grounded", "contradict", "source")),
        ("coverage", ("cover", "main point", "key point", "main idea", "relevan", "essential",
                      "important point", "important information", "key information")),
        ("distinct", ("repeti", "repeat", "redundan", "duplicat", "coheren", "fluen", "readab")),
        ("length", ("length", "concise", "brief", "short", "long", "verbose", "wordy")),
    )
    for stem in stems
)  # fmt: skip
_EMPHASIS = re.compile(
    r"\bfocus(?:es|ed|ing)?\s+(?:\w+\s+){0,2}?on\b|\bpay(?:ing)?\s+(?:\w+\s+){0,2}?attention\s+to\b"
    r"|\bprioriti[sz]e\b|\bemphasi[sz]e\b|\bemphasis\s+on\b|\babove\s+all\b|\bmost\s+important(?:ly)?\b",
    re.I,
)
_SENTENCE_END = re.compile(r"[.!?;\n]")
_STRICT = re.compile(
    r"\bbe\s+(?:very\s+|more\s+|extra\s+|quite\s+)?(?:strict|harsh|severe|demanding|critical)\b"
    r"|\b(?:judge|score|grade|rate|mark)\s+(?:\w+\s+)?(?:strictly|harshly|severely|conservatively)\b"
    r"|\bstrict\s+(?:judge|grader|evaluator|marker|standard)s?\b"
    r"|\b(?:give|award|assign)\s+(?:a\s+|the\s+)?(?:score\s+(?:of\s+)?)?\d+(?:\s*(?:or|and|-|–)\s*\d+)?"
    r"\s+only\s+(?:when|if)\b"
    r"|\breserve\s+(?:a\s+|the\s+)?(?:scores?\s+(?:of\s+)?)?\d",
    re.I,
)
_LENIENT = re.compile(
    r"\bbe\s+(?:very\s+|more\s+|quite\s+)?(?:lenient|generous|forgiving)\b"
    r"|\b(?:judge|score|grade|rate|mark)\s+(?:\w+\s+)?(?:leniently|generously)\b"
    r"|\bbenefit\s+of\s+the\s+doubt\b|\blenient\s+(?:judge|grader|evaluator|marker|standard)s?\b",
    re.I,
)
# where the item begins: one of our item tags, or a tag or label naming a source or a candidate
_ITEM_OPEN = re.compile(r"<(?:source|candidate|candidate_a|candidate_b)>|<clause\s", re.I)
_ITEM_WORDS = frozenset((*_SOURCE_WORDS, *_CANDIDATE_WORDS))
_EXAMPLE_OPEN = re.compile(r"<example(?:\s[^<>]*)?>", re.I)
_EXAMPLE_CLOSE = re.compile(r"</example>", re.I)
# `Example 1:`, `### Example 2`, `**Example 3.**` on a line of its own
_EXAMPLE_HEAD = re.compile(
    r"^[ \t]*[#*_>-]*[ \t]*example[ \t]*#?[ \t]*\d*[ \t]*[:.)]?[ \t]*[*_]*[ \t]*$", re.I
)
# the line that ends a plain-text example: `Score: 4` (also Rating / Label / Verdict)
_EXAMPLE_LABEL = re.compile(
    r"^[ \t]*[*_]*(?:score|rating|label|verdict)[*_]*[ \t]*[:=][ \t]*[*_\[]*[ \t]*(?P<value>[^\s*_\]]+)[ \t*_\]]*$",
    re.I,
)


@dataclass(frozen=True)
class Example:
    """One worked example a prompt shows: a candidate (and its own source, if given) and its label."""

    candidate: str
    source: str | None
    label: str


@dataclass(frozen=True)
class Guidance:
    """What the simulator follows in a prompt's instructions and examples (module docstring)."""

    emphasis: tuple[str, ...] = ()  # features named by an emphasis phrase, in order, each once
    strictness: int = 0  # +1 strict, -1 lenient, 0 neither (or both)
    examples: tuple[Example, ...] = ()

    @property
    def weights(self) -> dict[str, float]:
        """The quality weights with each emphasised feature's weight doubled, renormalised to sum 1."""
        raw = {f: w * (2.0 if f in self.emphasis else 1.0) for f, w in WEIGHTS.items()}
        total = sum(raw.values())
        return {f: w / total for f, w in raw.items()}

    def quality_score(self, q: Quality) -> float:
        if not self.emphasis:
            return q.score  # exactly as before (same float operations)
        w = self.weights
        return sum(w[f] * float(getattr(q, f)) for f in WEIGHTS)

    def followed(self, kind: str, calibrated: int) -> str:
        """`followed: …` for the rationale, or '' when nothing was followed."""
        parts = [f"emphasis={f}" for f in self.emphasis]
        if kind == POINTWISE and self.strictness:
            parts.append("strict" if self.strictness > 0 else "lenient")
        if calibrated:
            parts.append(f"calibrated on {calibrated} example{'s' if calibrated != 1 else ''}")
        elif self.examples:
            why = "pairwise" if kind == PAIRWISE else "no usable label"
            parts.append(f"{len(self.examples)} example(s) ignored ({why})")
        return f"followed: {'; '.join(parts)}. " if parts else ""


@lru_cache(maxsize=256)  # the same instructions come with every item of a dimension
def _read_instructions(text: str) -> tuple[tuple[str, ...], int]:
    emphasis: list[str] = []
    for m in _EMPHASIS.finditer(text):
        end = _SENTENCE_END.search(text, m.end())
        tail = text[m.end() : end.start() if end else len(text)].lower()
        hits = [(tail.find(stem), feature) for stem, feature in _EMPHASIS_FEATURES if stem in tail]
        if hits:
            feature = min(hits)[1]
            if feature not in emphasis:
                emphasis.append(feature)
    strictness = int(bool(_STRICT.search(text))) - int(bool(_LENIENT.search(text)))
    return tuple(emphasis), strictness


def _opens_item(line: str) -> bool:
    """Whether the item (its source or a candidate) begins on this line."""
    if _ITEM_OPEN.search(line):
        return True
    m = _LABEL.match(line)
    if m is not None and _ITEM_WORDS.intersection(_label_words(m)):
        return True
    h = _HEAD.match(line)
    if h is not None and not _END.match(line) and _ITEM_WORDS.intersection(h.group("noun").lower().split()):
        return True
    return any(_ITEM_WORDS.intersection(re.split(r"[_-]", name.lower())) for name in _ANY_OPEN.findall(line))


_ANY_OPEN = re.compile(r"<([A-Za-z][\w-]*)>")


def _example_from(body: str, tagged: bool) -> Example | None:
    if tagged:
        label = last_tag(body, "score") or last_tag(body, "label") or last_tag(body, "verdict")
        lines = body.split("\n")
        if label is None:
            for k in range(len(lines) - 1, -1, -1):
                if m := _EXAMPLE_LABEL.match(lines[k]):
                    label, body = m.group("value"), "\n".join(lines[:k])
                    break
        cand = last_tag(body, "candidate")
        source = last_tag(body, "source")
    else:
        lines = body.split("\n")
        m = _EXAMPLE_LABEL.match(lines[-1])
        label, body = (m.group("value") if m else None), "\n".join(lines[:-1])
        cand, source = None, None
    if label is None:
        return None
    if cand is None:
        found = read_layout(body, pairwise=False)
        cand, source = (found.candidates[0] if found.candidates else None), found.source
        has_label = any(_LABEL.match(line) for line in body.split("\n"))
        if cand is None and not has_label and body.strip():
            cand = body.strip()  # an example that is just the text and its score
    return Example(cand, source, label.strip()) if cand else None


def read_guidance(messages: Sequence[Mapping[str, Any]], text: str) -> tuple[Guidance, str]:
    """The instructions and examples of a judge prompt, and `text` (the final user message) with
    its example blocks cut out, which is what the item is then read from. Instructions are the
    system messages and the text of the user message BEFORE the item begins (the first item tag,
    or the first tag or label naming a source or a candidate); nothing at or after that point can
    steer the judge, so an item cannot instruct it. Examples are `<example>…</example>` blocks and
    `Example N:` sections ending in a `Score: N` line, found before the item begins."""
    instructions = [content_text(m.get("content")) for m in messages if m.get("role") == "system"]
    examples: list[Example] = []
    cuts: list[tuple[int, int]] = []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    i = 0
    while i < len(lines):
        line = lines[i]
        if (opened := _EXAMPLE_OPEN.search(line)) is not None:
            close = _EXAMPLE_CLOSE.search(text, starts[i] + opened.end())
            if close is not None:
                instructions.append(line[: opened.start()])
                if ex := _example_from(text[starts[i] + opened.end() : close.start()], tagged=True):
                    examples.append(ex)
                j = next(k for k in range(i, len(lines)) if starts[k + 1] > close.end())
                cuts.append((starts[i] + opened.start(), close.end()))
                i = j + 1
                continue
        if _EXAMPLE_HEAD.match(line):
            j = i + 1
            while j < len(lines) and not (
                _EXAMPLE_LABEL.match(lines[j]) or _EXAMPLE_HEAD.match(lines[j]) or _ITEM_OPEN.search(lines[j])
            ):
                j += 1
            if j < len(lines) and _EXAMPLE_LABEL.match(lines[j]):
                if ex := _example_from("\n".join(lines[i + 1 : j + 1]), tagged=False):
                    examples.append(ex)
                cuts.append((starts[i], starts[j + 1] - 1))
                i = j + 1
                continue
        if _opens_item(line):
            break
        instructions.append(line)
        i += 1
    emphasis, strictness = _read_instructions("\n".join(instructions))
    if cuts:
        kept, pos = [], 0
        for a, b in cuts:
            kept.append(text[pos:a])
            pos = b
        text = "".join(kept) + text[pos:]
    return Guidance(emphasis, strictness, tuple(examples)), text


def _calibration(
    g: Guidance, source: str | None, lo: int, hi: int, s: SimSettings
) -> tuple[float, float, int] | None:
    """(intercept, slope, n) of the q̃ → score line fitted to the examples, or None without usable ones."""
    xs: list[float] = []
    ys: list[float] = []
    for ex in g.examples:
        try:
            y = float(ex.label)
        except ValueError:
            continue
        if not (lo <= y <= hi) or not math.isfinite(y):
            continue
        xs.append(g.quality_score(quality(ex.candidate, ex.source if ex.source is not None else source)))
        ys.append(y)
    if not xs:
        return None
    default = (hi - lo) / s.q_span
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = default
    if len(set(ys)) >= 2 and var > 1e-12:
        fitted = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
        if fitted > 0:
            slope = min(4 * default, max(default / 4, fitted))
    return my - slope * mx, slope, len(xs)


def _describe(label: str, q: Quality) -> str:
    return (
        f"{label}: {q.support:.0%} of its word pairs appear in the source, it mentions "
        f"{q.coverage:.0%} of the source's key words, {q.distinct:.0%} distinct trigrams, {q.words} words"
    )


def _pairwise(
    model: str, text: str, source: str | None, rng: random.Random, s: SimSettings, g: Guidance
) -> dict[str, Any]:
    found = read_layout(text, pairwise=True)
    if len(found.candidates) != 2:
        return {"rationale": "[simulated] I could not find both candidates.", "verdict": "tie"}
    a, b = found.candidates
    source = source if source is not None else found.source
    qa, qb = quality(a, source), quality(b, source)
    seen_a = g.quality_score(qa) + _model_noise(model, a, s.noise) + rng.gauss(0.0, s.noise / 4)
    seen_b = g.quality_score(qb) + _model_noise(model, b, s.noise) + rng.gauss(0.0, s.noise / 4)
    diff = seen_a - seen_b
    verdict = "A" if diff > 0.01 else ("B" if diff < -0.01 else "tie")
    if rng.random() < s.position_bias:
        verdict = "B"
    why = {
        "A": "A reads as the better of the two",
        "B": "B reads as the better of the two",
        "tie": "they are about as good",
    }
    followed = g.followed(PAIRWISE, 0)
    rationale = (
        f"[simulated] {followed}{_describe('A', qa)}; {_describe('B', qb)}. On balance {why[verdict]}."
    )
    return {"rationale": rationale, "verdict": verdict}


def _pointwise(
    model: str, text: str, source: str | None, rng: random.Random, s: SimSettings, g: Guidance
) -> dict[str, Any]:
    lo, hi = prompt_scale(text)
    found = read_layout(text, pairwise=False)
    if not found.candidates:
        return {"rationale": "[simulated] I could not find the candidate.", "score": lo}
    cand = found.candidates[0]
    source = source if source is not None else found.source
    q = quality(cand, source)
    seen = g.quality_score(q) + _model_noise(model, cand, s.noise) + rng.gauss(0.0, s.noise / 4)
    fit = _calibration(g, source, lo, hi, s) if g.examples else None
    raw = lo + (hi - lo) * (seen - s.q_low) / s.q_span if fit is None else fit[0] + fit[1] * seen
    if g.strictness:
        raw -= g.strictness  # one level: the window's q_low moved by q_span / (hi - lo)
    score = min(hi, max(lo, round(raw)))
    followed = g.followed(POINTWISE, fit[2] if fit else 0)
    return {
        "rationale": f"[simulated] {followed}{_describe('The candidate', q)}; overall {score}/{hi}.",
        "score": score,
    }


def prompt_scale(text: str) -> tuple[int, int]:
    """The score range the pointwise prompt asks for. The template states it in its first line,
    before any item text, so the FIRST match is the template's own."""
    m = _SCALE.search(text)
    if m is None:
        return 1, 5
    lo, hi = int(m.group(1)), int(m.group(2))
    return (lo, hi) if lo < hi else (1, 5)


_CLAUSE_FEATURES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("repeat", "repetit", "redundan", "duplicate"), "distinct"),
    (("source", "fact", "support", "halluc", "consisten", "faithful", "accura", "contradict"), "support"),
    (("main", "key", "cover", "relevan", "important", "essential"), "coverage"),
    (("length", "concise", "brief", "short", "long", "verbose"), "length"),
)
_THRESHOLD = {"distinct": 0.95, "support": 0.85, "coverage": 0.6, "length": 0.9, "overall quality": 0.85}


def _clause_feature(clause: str, q: Quality) -> tuple[str, float]:
    lowered = clause.lower()
    for stems, feature in _CLAUSE_FEATURES:
        if any(stem in lowered for stem in stems):
            return feature, float(getattr(q, feature))
    return "overall quality", q.score


def _clauses(model: str, text: str, source: str | None, rng: random.Random, s: SimSettings) -> dict[str, Any]:
    found = read_layout(text, pairwise=False)
    cand = found.candidates[0] if found.candidates else ""
    q = quality(cand, source if source is not None else found.source)
    verdicts: list[dict[str, Any]] = []
    for cid, clause in clauses_in(text):
        feature, value = _clause_feature(clause, q)
        sd = s.noise * (VAGUE_NOISE if feature == "overall quality" else 1.0)
        seen = value + _model_noise(model, f"{cid}\x00{cand}", sd) + rng.gauss(0.0, s.noise / 4)
        met = seen > _THRESHOLD[feature]
        why = f"[simulated] {feature} {value:.2f} -> {'met' if met else 'not met'}"
        verdicts.append({"id": cid, "rationale": why, "met": met})
    met_count = sum(v["met"] for v in verdicts)
    return {"rationale": f"[simulated] {met_count} of {len(verdicts)} clauses met.", "clauses": verdicts}


# The simulated editor (labelled: every reason starts with "[simulated editor]"). It knows which
# properties the simulated judges read (`_CLAUSE_FEATURES`): a clause naming none of them is vague,
# and the rewrite appends the one property the dimension's name points to (source support for
# consistency/faithfulness, else coverage of the source's main points). A clause that already names
# a property is returned with that property stated once more, which changes nothing a sim judge reads.
_PROPERTY_TEXT = {
    "support": "every statement in it is supported by the source",
    "coverage": "it mentions the main points of the article",
    "distinct": "no phrase in it is repeated",
    "length": "its length is between 20 and 120 words",
}
_TAG_ATTR = re.compile(
    r"<clause_to_rewrite\s+id=\"([^\"]*)\"\s+dimension=\"([^\"]*)\">(.*?)</clause_to_rewrite>", re.DOTALL
)
_SPLIT_ATTR = re.compile(r"<dimension_to_split\s+name=\"([^\"]*)\">(.*?)</dimension_to_split>", re.DOTALL)


def _named_feature(text: str) -> str | None:
    lowered = text.lower()
    for stems, feature in _CLAUSE_FEATURES:
        if any(stem in lowered for stem in stems):
            return feature
    return None


def _dimension_feature(dimension: str) -> str:
    named = _named_feature(dimension)
    return named if named in ("support", "coverage") else "coverage"


def _rewrite(text: str) -> dict[str, Any]:
    found = _TAG_ATTR.findall(text)
    if not found:
        return {"reason": "[simulated editor] no clause found", "clause": "The text is acceptable."}
    _cid, dimension, clause = found[-1]
    clause = " ".join(clause.split()).rstrip(".")
    named = _named_feature(clause)
    if named is None:
        feature = _dimension_feature(dimension)
        reason = (
            f"[simulated editor] the clause names no checkable property, so judges read it differently; "
            f"it now names one ({feature})."
        )
    else:
        feature = named
        reason = (
            f"[simulated editor] the clause already names a checkable property ({feature}); stated once more."
        )
    return {"reason": reason, "clause": f"{clause}; concretely, {_PROPERTY_TEXT[feature]}."}


def _keep(text: str) -> dict[str, Any]:
    """An editor that finds nothing to fix: the clause comes back as it was."""
    found = _TAG_ATTR.findall(text)
    clause = html.unescape(" ".join(found[-1][2].split())) if found else "The text is acceptable."
    return {"reason": "[simulated editor] the clause is clear as it stands; kept.", "clause": clause}


# Checker proposals (`clause_checker`, labelled "[simulated editor]"), deterministic, good and bad on
# purpose so that the agreement threshold has something to refuse:
# - a clause giving a word range ("between 20 and 120 words", "at most 60 words") -> word_count with
#   those numbers (good);
# - a clause quoting phrases ("names the sections 'Background' and 'Outcome'") -> phrase, all (good);
# - a clause naming a language ("written in English") -> language (good);
# - a clause about repetition -> word_count max 40 (BAD: reads repetition as length);
# - anything else -> none.
_CHECK_TAG = re.compile(r"<clause_to_check\s+id=\"([^\"]*)\">(.*?)</clause_to_check>", re.DOTALL)
_RANGE = re.compile(r"between\s+(\d+)\s+and\s+(\d+)\s+words", re.IGNORECASE)
_AT_MOST = re.compile(r"(?:at most|no more than|up to)\s+(\d+)\s+words", re.IGNORECASE)
_AT_LEAST = re.compile(r"(?:at least|no fewer than)\s+(\d+)\s+words", re.IGNORECASE)
_QUOTED = re.compile(r"[\"'“‘]([^\"'”’]{2,60})[\"'”’]")
_LANGUAGES = {
    "english": "en",
    "german": "de",
    "french": "fr",
    "spanish": "es",
    "italian": "it",
    "dutch": "nl",
}
_NO_PARAMS: dict[str, Any] = {
    "min": None,
    "max": None,
    "phrases": None,
    "mode": None,
    "pattern": None,
    "expect": None,
    "language": None,
}


def _checker(text: str) -> dict[str, Any]:
    found = _CHECK_TAG.findall(text)
    clause = html.unescape(" ".join(found[-1][1].split())) if found else ""
    lowered = clause.lower()
    params = dict(_NO_PARAMS)
    tag = "[simulated editor]"
    if m := _RANGE.search(clause):
        params.update(min=int(m.group(1)), max=int(m.group(2)))
        return {"reason": f"{tag} the clause states a word range.", "checker": "word_count", "params": params}
    if (hi := _AT_MOST.search(clause)) or (lo := _AT_LEAST.search(clause)):
        if hi:
            params["max"] = int(hi.group(1))
        else:
            params["min"] = int(lo.group(1))  # type: ignore[union-attr]
        return {"reason": f"{tag} the clause states a word limit.", "checker": "word_count", "params": params}
    if quoted := _QUOTED.findall(clause):
        params.update(phrases=quoted, mode="all")
        return {"reason": f"{tag} the clause names required phrases.", "checker": "phrase", "params": params}
    for word, code in _LANGUAGES.items():
        if word in lowered:
            params["language"] = code
            return {"reason": f"{tag} the clause names a language.", "checker": "language", "params": params}
    if _named_feature(clause) == "distinct":
        params["max"] = 40
        return {
            "reason": f"{tag} repetition makes a text long, so a word cap stands for it (a bad mapping).",
            "checker": "word_count",
            "params": params,
        }
    return {
        "reason": f"{tag} no checker answers this clause; it needs a judge.",
        "checker": "none",
        "params": params,
    }


_ALIGN_INSTRUCTIONS = re.compile(r"<instructions_to_revise>\n?(.*?)\n?</instructions_to_revise>", re.DOTALL)
_ALIGN_SCORES = re.compile(
    r"<judge_score>([-\d.]+)</judge_score>.*?<human_score>([-\d.]+)</human_score>", re.DOTALL
)
STRICT = "Be strict: give a high score only when the text fully meets every point above."
LENIENT = "Be lenient: give a low score only when the text clearly fails the points above."


def _align(text: str) -> dict[str, Any]:
    """Revised judge instructions (labelled): stricter or more lenient, by the humans' scores."""
    found = _ALIGN_INSTRUCTIONS.search(text)
    current = html.unescape(found.group(1)).strip() if found else ""
    pairs = [(float(j), float(h)) for j, h in _ALIGN_SCORES.findall(text)]
    gap = sum(h - j for j, h in pairs) / len(pairs) if pairs else 0.0
    if gap == 0:
        return {"reason": "[simulated editor] the scores agree on average; kept.", "instructions": current}
    line, how = (STRICT, "lower") if gap < 0 else (LENIENT, "higher")
    base = "\n".join(x for x in current.splitlines() if x not in (STRICT, LENIENT)).strip()
    return {
        "reason": f"[simulated editor] the humans scored {how} than the judge on {len(pairs)} examples "
        f"(mean gap {gap:+.2f}).",
        "instructions": f"{base}\n\n{line}".strip(),
    }


def _split(text: str) -> dict[str, Any]:
    found = _SPLIT_ATTR.findall(text)
    dimension = found[-1][0] if found else "the dimension"
    main = _dimension_feature(dimension)
    clauses = [f"For {dimension}, {_PROPERTY_TEXT[main]}."] + [
        f"For {dimension}, {_PROPERTY_TEXT[f]}."
        for f in ("support", "coverage", "distinct", "length")
        if f != main
    ]
    return {
        "reason": "[simulated editor] one clause per property the simulated judges can read.",
        "clauses": clauses,
    }


def _sprawl(answer: dict[str, Any], n: int) -> dict[str, Any]:
    """An editor that does not stop: the rewrite padded to `n` characters, or `n` split clauses."""
    if "clause" in answer:
        filler = " Also, the text reads well in every respect."
        text = answer["clause"]
        return {**answer, "clause": (text + filler * (1 + n // len(filler)))[:n]}
    clauses = answer["clauses"]
    return {**answer, "clauses": [f"{clauses[i % len(clauses)]} (variant {i + 1})" for i in range(n)]}


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
