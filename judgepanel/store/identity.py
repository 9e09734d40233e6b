"""Readable sample identity: what a person recognises a case by, instead of a 45-character id.

A unit (an item, or a pair of items) is shown as the first words of its source (the item's
`meta.title` when the importer kept one, else its input, else its output) and a short id (the
external id with every long hexadecimal run cut to its first 6 characters and "…"); the full id
stays beside it (a hover title on pages, its own key in JSON). Rows in, labels out: the viewer, the
report and the CLI tables all name a case this way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, select

from judgepanel.store.models import Item, Pair

TITLE_WORDS = 7
TITLE_CHARS = 60
_HEX_RUN = re.compile(r"[0-9a-fA-F]{12,}")
_SPACE = re.compile(r"\s+")


def short_id(external_id: str) -> str:
    """`dm-test-8764fb95bfad8ee849274873a92fb8d6b400eee2/M11` → `dm-test-8764fb…/M11`."""
    return _HEX_RUN.sub(lambda m: m.group(0)[:6] + "…", external_id)


def first_words(text: str | None, words: int = TITLE_WORDS, chars: int = TITLE_CHARS) -> str:
    """The first `words` words of `text` (at most `chars` characters, cut at a word), with "…" when
    anything was left out; "" for no text."""
    flat = _SPACE.sub(" ", text or "").strip()
    if not flat:
        return ""
    parts = flat.split(" ")
    head = " ".join(parts[:words])
    if len(head) > chars:
        head = head[:chars].rsplit(" ", 1)[0] if " " in head[:chars] else head[:chars]
    return head if head == flat else head.rstrip(" ,.;:") + "…"


def pair_short(a: str, b: str) -> str:
    """Two short ids as one, the second without the prefix it shares with the first (up to a
    separator): `dm-test-8764fb…/M11 vs …/M13`."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    common = a[:n]
    cut = max(common.rfind(c) for c in "/|:-_.")
    if cut >= 3 and cut < len(b) - 1:
        return f"{a} vs …{b[cut:]}"
    return f"{a} vs {b}"


@dataclass(frozen=True)
class UnitIdentity:
    """How a unit is named: `title` (first words of its source) and `short` (its short id); `full`
    is the external id (`a | b` for a pair), never cut."""

    unit: int
    full: str
    short: str
    title: str

    @property
    def label(self) -> str:
        return f"{self.title} · {self.short}" if self.title else self.short

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.full, "short": self.short, "title": self.title, "label": self.label}


def _title(meta: Any, source: str | None, output: str | None) -> str:
    if isinstance(meta, dict) and isinstance(meta.get("title"), str) and meta["title"].strip():
        return first_words(meta["title"], words=12, chars=TITLE_CHARS)
    return first_words(source) or first_words(output)


def item_identity(
    item_id: int, external_id: str, meta: Any = None, source: str | None = None, output: str | None = None
) -> UnitIdentity:
    return UnitIdentity(item_id, external_id, short_id(external_id), _title(meta, source, output))


def unit_identities(engine: Engine, protocol: str, units: Iterable[int]) -> dict[int, UnitIdentity]:
    """Unit id → its identity (pair ids for a pairwise campaign, item ids otherwise)."""
    ids = sorted(set(units))
    if not ids:
        return {}
    cut = TITLE_CHARS * 4  # enough text for the title; never the whole article
    cols = (
        Item.id,
        Item.external_id,
        Item.meta,
        func.substr(Item.input, 1, cut),
        func.substr(Item.output, 1, cut),
    )
    with engine.connect() as conn:
        if protocol != "pairwise":
            return {
                int(r[0]): item_identity(int(r[0]), str(r[1]), *r[2:])
                for r in conn.execute(select(*cols).where(Item.id.in_(ids)))
            }
        pairs = conn.execute(select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.id.in_(ids))).all()
        wanted = sorted({int(i) for _, a, b in pairs for i in (a, b)})
        items = {
            int(r[0]): item_identity(int(r[0]), str(r[1]), *r[2:])
            for r in conn.execute(select(*cols).where(Item.id.in_(wanted)))
        }
    out = {}
    for pid, a, b in pairs:
        x, y = items[int(a)], items[int(b)]
        title = x.title if x.title == y.title or not y.title else f"{x.title} / {y.title}"
        out[int(pid)] = UnitIdentity(int(pid), f"{x.full} | {y.full}", pair_short(x.short, y.short), title)
    return out


__all__ = ["UnitIdentity", "first_words", "item_identity", "pair_short", "short_id", "unit_identities"]
