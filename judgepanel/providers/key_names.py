"""The names of the environment variables that may hold a judge's API key: the providers' own and
those the user adds in `$JUDGEPANEL_KEY_ENVS` (the rules and why: `providers.keys`).

A module of its own so that the key scrubber (`providers.errors`), which every read command's JSON
passes through, knows every such name without loading the spec and key rules.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

ALLOW_ENV = "JUDGEPANEL_KEY_ENVS"
PROVIDER_KEY_ENVS = frozenset(
    {
        # what the SDKs and judgepanel's providers read by themselves
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "AZURE_OPENAI_API_KEY",
        # Hugging Face inference endpoints
        "HF_TOKEN",
        # OpenAI-compatible hosts (docs/campaigns.md, "Per-judge keys and more providers")
        "TOGETHER_API_KEY",
        "GROQ_API_KEY",
        "MISTRAL_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY",
        "FIREWORKS_API_KEY",
        "XAI_API_KEY",
        "PERPLEXITY_API_KEY",
        "DEEPINFRA_API_KEY",
        "CEREBRAS_API_KEY",
    }
)
NEVER_KEYS = re.compile(r"JUDGEPANEL_.*|.*(?:_URL|_URI|_DSN)")
_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")


def user_key_envs(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The names the user allowed in `$JUDGEPANEL_KEY_ENVS` (comma or space separated); names that
    are not variable names, judgepanel's own settings or URLs are left out."""
    raw = (os.environ if environ is None else environ).get(ALLOW_ENV, "")
    names = (n.strip() for n in raw.replace(",", " ").split())
    return frozenset(n for n in names if _NAME.fullmatch(n) and not NEVER_KEYS.fullmatch(n))
