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
from collections.abc import Mapping, Sequence

from judgepanel.providers.capabilities import family
from judgepanel.providers.spec import parse_spec, split_judge_name

_WORD = re.compile(r"[a-z]+")


def model_family(model: str) -> str:
    name = model.strip().lower().rsplit("/", 1)[-1]
    m = _WORD.match(name)
    return m.group(0) if m else name


def _provider(spec: str) -> tuple[str, str | None]:
    js = parse_spec(spec)
    return family(js.provider, js.base_url), (js.base_url or "").rstrip("/") or None


def editor_shares_family_with(editor: str, judges: Sequence[str]) -> dict[str, list[str]]:
    """judge spec (canonical) -> what it shares with the editor (`provider`, `model family`);
    judges that share nothing are left out, so an isolated editor gives {}. A judge may be given
    as `NAME=SPEC`."""
    ed = parse_spec(editor)
    out: dict[str, list[str]] = {}
    for given in judges:
        j = split_judge_name(given)[1]
        js = parse_spec(j)
        shared = []
        if _provider(j) == _provider(editor):
            shared.append("provider")
        if model_family(js.model) == model_family(ed.model):
            shared.append("model family")
        if shared:
            out[js.name] = shared
    return out


def isolation_warning(shared: dict[str, list[str]], names: Mapping[str, str] | None = None) -> str | None:
    """One line naming each judge by its short name (`names`: spec -> name; issue 19 §3)."""
    if not shared:
        return None
    shown = {(names or {}).get(j, j): s for j, s in shared.items()}
    each = "; ".join(f"{j} ({', '.join(s)})" for j, s in sorted(shown.items()))
    return f"the editor shares a provider or model family with {len(shared)} judge(s): {each}"
