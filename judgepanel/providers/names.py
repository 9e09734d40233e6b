"""Judge names: the short name a campaign shows for each judge spec, and which spec parameters
never appear in one.

The readers of `campaign list`, `campaign status` and `metrics agreement` name judges with these
alone; parsing and checking a spec (`providers.spec`, which also loads the key scrubber, the
capability table and the key rules) is for the commands that create or run campaigns (issue 20 §2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qsl, urlsplit

# never sent, never part of a name; defined once, with their parsers, in `providers.params`
from judgepanel.providers.params import OPERATIONAL_KEYS as OPERATIONAL_KEYS

ENDPOINT_KEYS = frozenset({"base_url", "endpoint", "api_version"})

_SECRET_NAMES = frozenset(
    {
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "auth_token",
        "bearer",
        "auth",
        "authorization",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "pwd",
        "credential",
        "credentials",
        "x_api_key",
    }
)
_SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_credentials")


def is_secret_name(key: str) -> bool:
    """A parameter named like a secret (`api_key`, `x-api-key`, `client_secret`, `*_token` …)."""
    norm = key.strip().lower().replace("-", "_")
    return norm in _SECRET_NAMES or norm.endswith(_SECRET_SUFFIXES)


def _short_url(url: str) -> str:
    """`http://127.0.0.1:8001/v1` -> `127.0.0.1:8001/v1`; a long one keeps its end (the port)."""
    parts = urlsplit(url)
    shown = (parts.netloc + parts.path.rstrip("/")) or url
    return shown if len(shown) <= 28 else "…" + shown[-27:]


def derive_judge_names(specs: Sequence[str]) -> dict[str, str]:
    """A short, distinct name per judge spec: the model, with the provider when the judges' providers
    differ and the parameters whose values differ between judges of the same model (`gpt-4o-mini
    (temperature=1)`, `gpt-4o-mini (base_url=127.0.0.1:8001/v1)`). Never a key-like parameter
    (`key_env` and anything named like a secret). The full spec where that is still not unique.

    The one source of derived names: the store keeps them with the campaign, and the CLI, report,
    viewer and exports show them."""
    parsed = []
    for spec in specs:
        head, _, query = spec.partition("?")
        provider, _, model = head.partition(":")
        params = {
            k: v
            for k, v in parse_qsl(query, keep_blank_values=True)
            if k != "key_env" and not is_secret_name(k) and k not in OPERATIONAL_KEYS
        }
        parsed.append((provider, model or head, params))
    providers = {p for p, _, _ in parsed}
    out: dict[str, str] = {}
    for spec, (provider, model, ps) in zip(specs, parsed, strict=True):
        same = [q for p, m, q in parsed if (p, m) == (provider, model)]
        keys = {k for q in same for k in q}
        differing = sorted(k for k in keys if len({q.get(k) for q in same}) > 1)
        name = f"{provider}:{model}" if len(providers) > 1 else model
        extra = [f"{k}={_short_url(ps[k]) if k in ENDPOINT_KEYS else ps[k]}" for k in differing if k in ps]
        out[spec] = name + (f" ({', '.join(extra)})" if extra else "")
    counts = Counter(out.values())
    for spec in specs:
        if counts[out[spec]] > 1:
            out[spec] = spec
    return out


def stored_judge_names(judges: Sequence[str], spec: Mapping[str, object] | None) -> dict[str, str]:
    """judge spec -> name for the judges of a campaign whose stored `spec` may carry `judges` and
    `judge_names` (parallel lists; campaigns planned before names existed have none): the stored
    name where there is one, else the derived one (`derive_judge_names` over `judges`)."""
    derived = derive_judge_names(judges)
    kept: dict[str, str] = {}
    if spec is not None:
        specs, names = spec.get("judges"), spec.get("judge_names")
        if isinstance(specs, list) and isinstance(names, list) and len(specs) == len(names):
            kept = {str(j): str(n) for j, n in zip(specs, names, strict=True)}
    out = {j: kept.get(j, derived[j]) for j in judges}
    if len(set(out.values())) < len(out):  # a judge linked later took a stored judge's name
        out = {j: kept.get(j, j) for j in judges}
    return out
