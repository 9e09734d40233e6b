"""Is the editor independent of the judges it edits for? (recorded with every comparison)

An editor of the same family as the judges may write clauses in the words its relatives already
agree on, which inflates inter-judge agreement without making the rubric any clearer (seed 002's
editor came from the family of three of its judges). Two judges share

- a provider when they are served by the same provider family and endpoint (`openai` vs
  `anthropic`; an `openai:` judge with a `base_url` is the server at that URL, not OpenAI);
- a model family when the model names start with the same word: the letters before the first
  digit, dash, dot or colon of the name after any `org/` prefix (`gpt-4o-mini` and `gpt-4.1` are
  `gpt`, `claude-haiku-4-5` is `claude`, `Qwen/Qwen2.5-7B-Instruct` is `qwen`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from judgepanel.providers.capabilities import family
from judgepanel.providers.spec import parse_spec

_WORD = re.compile(r"[a-z]+")


def model_family(model: str) -> str:
    name = model.strip().lower().rsplit("/", 1)[-1]
    m = _WORD.match(name)
    return m.group(0) if m else name


def _provider(spec: str) -> tuple[str, str | None]:
    js = parse_spec(spec)
    return family(js.provider, js.base_url), (js.base_url or "").rstrip("/") or None


def editor_shares_family_with(editor: str, judges: Sequence[str]) -> dict[str, list[str]]:
    """judge name -> what it shares with the editor (`provider`, `model family`); judges that
    share nothing are left out, so an isolated editor gives {}."""
    ed = parse_spec(editor)
    out: dict[str, list[str]] = {}
    for j in judges:
        js = parse_spec(j)
        shared = []
        if _provider(j) == _provider(editor):
            shared.append("provider")
        if model_family(js.model) == model_family(ed.model):
            shared.append("model family")
        if shared:
            out[js.name] = shared
    return out


def isolation_warning(shared: dict[str, list[str]]) -> str | None:
    if not shared:
        return None
    each = "; ".join(f"{j} ({', '.join(s)})" for j, s in sorted(shared.items()))
    return f"the editor shares a provider or model family with {len(shared)} judge(s): {each}"
