"""What `campaign plan` needs of a job's prompt, without rendering it again (issue 20 §1).

Plan counts each pending job's input tokens from its rendered prompt (`budget.estimate_tokens` of
its characters, plus 4 per message) and forecasts prompt caching from its stable prefixes. None of
that depends on the judge or on what runs learn later, so `campaign create` renders each distinct
prompt once and stores its `PromptShape` on the job (`job.prompt_chars`, `prompt_messages`,
`prompt_prefix_tokens`, and the digests of its stable prefixes, `prompt_prefixes`) with a fingerprint, `prompt_sig`, of everything the rendering read besides
the job's own items: the bundled prompt templates and the code that renders them, the campaign's
templates, rubric, turn and reference categories, and the clauses asked and answered by checkers.

`campaign plan` uses the stored figures of a job only when its fingerprint is the current one; it
renders the job (as it always did) when the fingerprint differs or is missing (campaigns created
before this), when the job's request key is needed (its judge's provider and model have requests
in the store, so the response cache might answer it), and — for jobs created before the prefixes
were stored — when one of its stable prefixes is long enough for the judge's prompt cache (the
forecast then needs the prefix texts; with `prompt_prefixes` it reads their digests instead).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from judgepanel.protocol.templates import Prompt
from judgepanel.providers.caching import prefix_digest
from judgepanel.resources import resource_dir
from judgepanel.runner.budget import estimate_tokens


@dataclass(frozen=True)
class PromptShape:
    chars: int  # characters of all messages
    messages: int  # number of messages
    prefix_tokens: int  # estimated tokens of the longest stable prefix, 0 when there is none
    # every stable prefix as `digest:tokens` joined by `;` (`encode_prefixes`): what the
    # prompt-cache forecast needs, so plan renders no prompt for it (issue 28 §5)
    prefixes: str = ""


def encode_prefixes(prefixes: Sequence[tuple[str, int]]) -> str:
    """`stable_prefixes` as stored in `job.prompt_prefixes`: each prefix's `prefix_digest` in hex
    and its estimated tokens, shortest first."""
    return ";".join(f"{prefix_digest(text).hex()}:{tokens}" for text, tokens in prefixes)


def decode_prefixes(stored: str) -> list[tuple[bytes, int]]:
    """`encode_prefixes` read back, for `CacheForecast.call_digests`."""
    out = []
    for part in filter(None, stored.split(";")):
        digest, tokens = part.split(":")
        out.append((bytes.fromhex(digest), int(tokens)))
    return out


def stable_prefixes(messages: Sequence[dict[str, str]], breaks: Sequence[int]) -> list[tuple[str, int]]:
    """The cumulative stable prefixes of a prompt (system text, then the user message up to each
    of its cut points) with their estimated token counts, shortest first."""
    *head, last = messages
    before = "".join(m["content"] for m in head)
    out = [(before, estimate_tokens(len(before)) + 4 * len(head))] if before else []
    for cut in breaks:
        text = before + last["content"][:cut]
        out.append((text, estimate_tokens(len(text)) + 4 * len(messages)))
    return out


def shape_of(prompt: Prompt) -> PromptShape:
    """The figures plan reads of a rendered prompt (as `prepare` sends it, before any re-ask note)."""
    messages = prompt.messages
    prefixes = stable_prefixes(messages, prompt.cache_breaks)
    return PromptShape(
        sum(len(m["content"]) for m in messages),
        len(messages),
        max((t for _, t in prefixes), default=0),
        encode_prefixes(prefixes),
    )


# the modules whose code decides what a prompt looks like (an edit to any re-renders at plan)
_CODE = (
    "protocol/templates.py",
    "protocol/custom.py",
    "protocol/schemas.py",
    "protocol/editor.py",
    "rubrics.py",
    "runner/prepare.py",
    "runner/shape.py",
    "runner/budget.py",
)


@lru_cache(maxsize=1)
def _code_digest() -> bytes:
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    try:
        for rel in _CODE:
            h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
        for path in sorted(resource_dir("prompts").iterdir()):
            if path.is_file():
                h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:  # sources not readable: a digest no other process shares, so plan always renders
        return os.urandom(32)
    return h.digest()


def signature(
    *,
    protocol: str,
    rubric_version_id: int | None,
    templates: object,
    turn: int | None,
    reference_categories: Sequence[str],
    asked: dict[str, list[str]],
    answered: dict[str, list[str]],
) -> str:
    """The fingerprint stored as `job.prompt_sig`: 16 hex digits of sha256 over the rendering code
    and prompt files, and the campaign's own inputs to every prompt (`asked` / `answered`:
    dimension -> the clause keys in the prompt / answered by a kept checker)."""
    h = hashlib.sha256(_code_digest())
    h.update(
        json.dumps(
            [protocol, rubric_version_id, templates, turn, sorted(reference_categories), asked, answered],
            sort_keys=True,
            default=str,
        ).encode()
    )
    return h.hexdigest()[:16]
