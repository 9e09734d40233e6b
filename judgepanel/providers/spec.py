"""Judge specs: `PROVIDER:MODEL[?param=value&…]` parsed into a frozen, canonically named `JudgeSpec`.

Examples::

    openai:gpt-4o-mini
    anthropic:claude-haiku-4-5?max_tokens=512
    openai:qwen2.5:7b?base_url=http://127.0.0.1:11434/v1&temperature=0
    sim:panel-a?position_bias=0.2&noise=0.1

Parameters fall into three groups, and only the first two are part of the judge's identity:

* sent to the model and part of every request hash (`JudgeSpec.request_params`): sampling
  (`temperature`, `top_p`, `max_tokens`, `seed`, …), `structured=on|off`, and the simulator's
  answer-shaping knobs (`position_bias`, `noise`, `parse_error_rate`, `prose_rate`, `q_low`,
  `q_span`, and the simulated editor's `keep_rate`);
* `revision`: a label the user gives the weights behind the judge (`revision=q4_k_m-2026-11`); never
  sent, but part of the name and of every request hash, so answers of one build are not reused for
  another. A local server ignores the request's `model`, so for `base_url` judges the runner also
  asks the server which model it serves (`GET /v1/models`) and keys the cache on that;
* endpoint: `base_url` (a different server may serve a different build of the "same" model);
* operational, which never change an answer and so are left out of `name`: `timeout`, `rpm`,
  `tpm`, `concurrency`, `price_in`, `price_out`, `price_cache_read`, `price_cache_write` (USD per
  million tokens), `batch_discount`, `prompt_cache=on|off`, `max_reply_bytes` (the largest reply
  body read, default 8 MB; `8M`, `512k` or bytes), and the simulator's
  `error_rate`, `latency`, `jitter`.

Secrets are refused outright, whatever they are called (`api_key`, `key`, `token`, `secret`,
`password`, …, or user:password in a `base_url`): keys come only from the environment, so the
spec, which is stored in the database as the judge's name, can never carry one. The free-text
parts of a spec (the model name and `base_url`) are checked in every form a server could decode
them to: a `base_url` may carry no `;` path parameter, no `name=value` in its path, no path
segment named like a secret and no percent-encoding at all (a double-encoded `%253D` would reach
the server as `=`), and neither part may hold anything shaped like a provider key (`sk-…`,
`sk-ant-…`, a long mixed-case token) or the value of a key configured in the environment. Error
messages name the offending parameter, never its value.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from judgepanel.errors import BadInput
from judgepanel.providers.capabilities import capabilities
from judgepanel.providers.errors import configured_secrets

# re-exported (`X as X`): callers that parse specs name their judges through this module too
from judgepanel.providers.names import ENDPOINT_KEYS as ENDPOINT_KEYS
from judgepanel.providers.names import OPERATIONAL_KEYS as OPERATIONAL_KEYS
from judgepanel.providers.names import derive_judge_names as derive_judge_names
from judgepanel.providers.names import is_secret_name
from judgepanel.providers.names import stored_judge_names as stored_judge_names
from judgepanel.providers.params import (
    KEY_ENV,
    OPERATIONAL,
    SIM_OPERATIONAL,
    ParamValue,
    integer,
    number,
    switch,
)

PROVIDERS = ("anthropic", "azure", "openai", "sim")

# Values shaped like provider keys are refused even under an innocent name: the usual prefixes
# (OpenAI sk-/sk-proj-, Anthropic sk-ant-, xAI, Groq, Google, Hugging Face, GitHub, AWS), and any
# long run of letters and digits that mixes cases and digits as random tokens do (a hex digest,
# one case only, is not refused).
_KEY_SHAPED = re.compile(
    r"(?i:\bsk[-_]|xai-|gsk_|AIza|\bhf_|\bgh[pousr]_|github_pat_|\bAKIA)[A-Za-z0-9_\-]{6,}"
    r"|(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{32,}"
)
_MODEL_KEY_PREFIX = re.compile(r"\s*sk[-_]", re.IGNORECASE)  # no model is called sk-…: a pasted key


def _choice(*options: str) -> Callable[[str], str]:
    def conv(raw: str) -> str:
        if raw not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return raw

    return conv


def _base_url(raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http(s) URL such as http://127.0.0.1:8000/v1")
    if parts.query or parts.fragment:
        raise ValueError("must not carry a query string or fragment")
    return raw.rstrip("/")


def _api_version(raw: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}(?:-preview)?", raw):
        raise ValueError("must be an API version such as 2024-10-21 or 2025-04-01-preview")
    return raw


def _version(raw: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
        raise ValueError("must be a date such as 2023-06-01")
    return raw


_SAMPLING: dict[str, Callable[[str], ParamValue]] = {
    "temperature": number(0.0, 2.0),
    "top_p": number(0.0, 1.0, open_lo=True),
    "max_tokens": integer(1),
    "seed": integer(),
    "structured": switch,
}


def _revision(raw: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:@+\-]{0,99}", raw):
        raise ValueError("must be a short label of letters, digits and . _ : @ + -")
    return raw


def max_reply_bytes(spec: JudgeSpec) -> int:
    """The judge's reply cap in bytes (`max_reply_bytes=`, default 8 MB)."""
    from judgepanel.providers.sdk import DEFAULT_MAX_REPLY_BYTES

    value = spec.params.get("max_reply_bytes")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_MAX_REPLY_BYTES


_IDENTITY: dict[str, Callable[[str], ParamValue]] = {"revision": _revision}
_PER_PROVIDER: dict[str, dict[str, Callable[[str], ParamValue]]] = {
    "openai": {
        "base_url": _base_url,
        "frequency_penalty": number(-2.0, 2.0),
        "presence_penalty": number(-2.0, 2.0),
        "reasoning_effort": _choice("none", "minimal", "low", "medium", "high", "xhigh"),
        "scoring": _choice("text", "logprobs"),  # logprobs: protocol.logprobs
        "top_logprobs": integer(1),  # the API caps it at 20
    },
    "azure": {
        # Azure OpenAI: the model part of the spec is the deployment name
        "endpoint": _base_url,
        "api_version": _api_version,
        "frequency_penalty": number(-2.0, 2.0),
        "presence_penalty": number(-2.0, 2.0),
        "reasoning_effort": _choice("none", "minimal", "low", "medium", "high", "xhigh"),
    },
    "anthropic": {
        "base_url": _base_url,
        "top_k": integer(1),
        "anthropic_version": _version,
    },
    "sim": {
        "position_bias": number(0.0, 1.0),
        "noise": number(0.0, 5.0),
        "parse_error_rate": number(0.0, 1.0),
        "keep_rate": number(0.0, 1.0),
        "prose_rate": number(0.0, 1.0),
        "q_low": number(0.0, 1.0),
        "q_span": number(0.01, 1.0),
        **SIM_OPERATIONAL,
        "editor_sprawl": integer(0),
    },
}


def _render(value: ParamValue) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)


@dataclass(frozen=True)
class JudgeSpec:
    """One judge: provider, model and typed parameters; `name` is the canonical spec string.

    `name` lists the identity parameters (everything except `OPERATIONAL_KEYS`) sorted by key, so
    `sim:a?noise=0.1&position_bias=0.2` and `sim:a?position_bias=0.2&noise=0.10&timeout=5` name
    the same judge, and `parse_spec(spec.name)` gives back a spec with the same name."""

    provider: str
    model: str
    params: dict[str, ParamValue]
    name: str

    def __hash__(self) -> int:
        return hash(self.name)

    def request_params(self) -> dict[str, ParamValue]:
        """Parameters that shape the answer: put them into every `ChatRequest.params` (and so
        into the request hash). Excludes the endpoint and operational parameters."""
        return {
            k: v
            for k, v in sorted(self.params.items())
            if k not in OPERATIONAL_KEYS and k not in ENDPOINT_KEYS
        }

    def get(self, key: str, default: ParamValue | None = None) -> ParamValue | None:
        return self.params.get(key, default)

    @property
    def base_url(self) -> str | None:
        value = self.params.get("base_url")
        return str(value) if value is not None else None

    @property
    def structured(self) -> bool:
        """Ask for structured output (JSON schema / forced tool) when the request has a schema."""
        return bool(self.params.get("structured", True))

    @property
    def timeout(self) -> float | None:
        value = self.params.get("timeout")
        return float(value) if value is not None else None

    def __str__(self) -> str:
        return self.name


def canonical_name(provider: str, model: str, params: Mapping[str, ParamValue]) -> str:
    shown = sorted((k, v) for k, v in params.items() if k not in OPERATIONAL_KEYS)
    if not shown:
        return f"{provider}:{model}"
    query = "&".join(f"{k}={quote(_render(v), safe=':/.-_~')}" for k, v in shown)
    return f"{provider}:{model}?{query}"


def parse_spec(text: str) -> JudgeSpec:
    """Parse `PROVIDER:MODEL[?param=value&…]`; raise `BadInput` with one clear line on any mistake."""
    raw = text.strip()
    head, sep, query = raw.partition("?")
    provider, colon, model = head.partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if not colon or not provider or not model:
        raise BadInput(f"judge spec must look like PROVIDER:MODEL[?param=value&…], got {head!r}")
    if provider not in PROVIDERS:
        raise BadInput(f"unknown provider {provider!r} in judge spec; known: {', '.join(PROVIDERS)}")
    if _MODEL_KEY_PREFIX.match(model) or _holds_key(model):
        raise BadInput("judge spec must not carry an API key; set it in the environment instead")
    allowed = {**_SAMPLING, **_IDENTITY, **OPERATIONAL, **_PER_PROVIDER[provider]}
    if provider != "sim":
        allowed |= KEY_ENV
    params: dict[str, ParamValue] = {}
    pairs = parse_qsl(query, keep_blank_values=True) if sep else []
    if sep and query.strip() and not pairs:
        raise BadInput(f"judge spec parameters must be param=value pairs joined by '&', got {query!r}")
    for key, value in pairs:
        key = key.strip()
        if is_secret_name(key):
            env = {
                "openai": "OPENAI_API_KEY",
                "anthropic": "ANTHROPIC_API_KEY",
                "azure": "AZURE_OPENAI_API_KEY",
            }.get(provider, "the environment")
            raise BadInput(
                f"judge spec parameter {key!r} looks like a secret and is refused: keys come only from {env} "
                "(or name the variable that holds it with key_env=NAME)"
            )
        if _holds_key(value):
            raise BadInput(f"judge spec parameter {key!r} holds something shaped like an API key; refused")
        if key not in allowed:
            raise BadInput(
                f"unknown parameter {key!r} for provider {provider!r}; known: {', '.join(sorted(allowed))}"
            )
        if key in params:
            raise BadInput(f"judge spec parameter {key!r} is given twice")
        if key == "base_url":
            _refuse_url_secrets(value)
        try:
            params[key] = allowed[key](value.strip())
        except ValueError as exc:
            raise BadInput(f"judge spec parameter {key!r}: {exc}") from None
    temperature = params.get("temperature")
    if isinstance(temperature, float):
        lo, hi = capabilities(provider, str(params.get("base_url") or "") or None).temperature
        if not lo <= temperature <= hi:
            raise BadInput(f"judge spec parameter 'temperature': {provider} takes {lo:g} to {hi:g}")
    ordered = dict(sorted(params.items()))
    return JudgeSpec(provider, model, ordered, canonical_name(provider, model, ordered))


def _decodings(value: str) -> list[str]:
    """`value` and what percent-decoding makes of it, layer by layer (a server may decode twice)."""
    forms = [value]
    for _ in range(4):
        decoded = unquote(forms[-1])
        if decoded == forms[-1]:
            break
        forms.append(decoded)
    return forms


def _holds_key(value: str) -> bool:
    """Key-shaped, or holding a key configured in the environment, in any decoded form."""
    secrets = [s for s in configured_secrets() if len(s) >= 8]
    return any(_KEY_SHAPED.search(form) or any(s in form for s in secrets) for form in _decodings(value))


def _refuse_url_secrets(value: str) -> None:
    value = value.strip()
    if "%" in value:
        # after the spec's own decoding a base_url has no business being encoded: %253D is how
        # `=` (and a key after it) would hide from every check below
        raise BadInput(
            "judge spec base_url must not be percent-encoded (it may hide a secret); write it plainly"
        )
    parts = urlsplit(value)
    if parts.username is not None or parts.password is not None:
        raise BadInput("judge spec base_url must not carry credentials (user:password@); use the environment")
    for qkey, _ in parse_qsl(parts.query, keep_blank_values=True):
        if is_secret_name(qkey):
            raise BadInput(f"judge spec base_url must not carry a secret query parameter ({qkey!r})")
    if ";" in parts.path or "=" in parts.path:
        # `/v1;api_key=…` and `/v1/api_key=…`: some servers read path parameters; no API base needs them
        raise BadInput(
            "judge spec base_url must not carry ';' or 'name=value' in its path (it may hide a secret)"
        )
    for segment in parts.path.split("/"):
        if segment and is_secret_name(segment):
            raise BadInput(
                f"judge spec base_url has a path segment named like a secret ({segment!r}); "
                "keys come only from the environment"
            )


# ---------------------------------------------------------------- names people can read

# A judge's short name (`--judge "mini=openai:gpt-4o-mini"`, `name:` in a campaign file): what
# every table, plot, report, viewer page and JSON shows instead of the spec. No `:` or `=`, so a
# `NAME=SPEC` is told from a spec by its first `=` (a spec's `=` comes after its `provider:`).
_JUDGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.+@/()\-]{0,59}")
_NAME_PREFIX = re.compile(r"\s*([^:?=&]+?)\s*=(.*)", re.DOTALL)


def check_judge_name(name: str) -> str:
    """`name` stripped, or `BadInput`: 1–60 letters, digits, spaces and `_.+@/()-`, never shaped
    like a key or holding one configured in the environment (names are stored and shown)."""
    n = name.strip()
    if not _JUDGE_NAME.fullmatch(n):
        raise BadInput(
            f"judge name {n[:60]!r} must be 1-60 letters, digits, spaces or _.+@/()- and start with a "
            "letter or digit"
        )
    if _holds_key(n) or _MODEL_KEY_PREFIX.match(n):
        raise BadInput("a judge name must not look like a key (names are stored and shown)")
    return n


def split_judge_name(text: str) -> tuple[str | None, str]:
    """`"mini=openai:gpt-4o-mini?temperature=0"` -> `("mini", "openai:gpt-4o-mini?temperature=0")`;
    a plain spec -> `(None, spec)`. The name is checked (`check_judge_name`)."""
    m = _NAME_PREFIX.fullmatch(text)
    if m is None or ":" not in m.group(2):
        return None, text.strip()
    return check_judge_name(m.group(1)), m.group(2).strip()


def editor_spec(text: str) -> JudgeSpec:
    """An editor's spec (`--editor`), parsed; `BadInput` for `NAME=SPEC`: an editor is not a panel
    judge with a short name (its campaigns show its spec), so the name would be silently dropped."""
    name, spec = split_judge_name(text)
    if name is not None:
        raise BadInput(
            f"--editor takes a spec (provider:model?params), not NAME=SPEC: the editor is shown by its "
            f"spec; give --editor {spec!r}"
        )
    return parse_spec(spec)


def panel_names(specs: Sequence[str], given: Sequence[str | None]) -> list[str]:
    """The names of a campaign's judges (`specs` canonical, in order): a given name, else the derived
    one (`derive_judge_names`; the full spec when that equals a name given to another judge).
    `BadInput` when two judges would share a name."""
    derived = derive_judge_names(specs)
    explicit = {g for g in given if g}
    names = [
        g or (derived[s] if derived[s] not in explicit else s) for s, g in zip(specs, given, strict=True)
    ]
    twice = [n for n, c in Counter(names).items() if c > 1]
    if twice and len(set(specs)) == len(specs):  # the same judge twice is refused by the campaign spec
        raise BadInput(
            f"judge name {twice[0]!r} is given to two judges of the campaign; names must be unique"
        )
    return names


def given_judge_names(judges: Sequence[str]) -> dict[str, str]:
    """canonical spec -> name for judges as given on a command line (`NAME=SPEC` or a spec): the
    names `campaign create` stores for the same `--judge` options (`panel_names`). A repair
    iteration keeps its judges as given and names them with this."""
    pairs = [split_judge_name(j) for j in judges]
    specs = [parse_spec(s).name for _, s in pairs]
    return dict(zip(specs, panel_names(specs, [n for n, _ in pairs]), strict=True))


def names_beside(judges: Sequence[object], names: object) -> dict[str, str]:
    """judge spec -> name from a stored JSON pair of lists, `judges` and `judge_names` beside it
    (a repair comparison); derived (`derive_judge_names`) where `names` is missing or does not fit,
    as in a comparison stored before names existed."""
    specs = [str(j) for j in judges]
    if isinstance(names, list) and len(names) == len(specs):
        return dict(zip(specs, map(str, names), strict=True))
    return derive_judge_names(specs)
