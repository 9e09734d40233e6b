"""Why calls failed, grouped by cause, each with the advice that can help it (issue 34).

The steps that stop on failed calls (an editor's rewrites in `repair run`, its revisions in
`align run`, a campaign's context refusals) say what went wrong per cause, not the first
failure's message for all of them, and give for each cause only advice that can change the
outcome:

    context     the prompt is longer than the server's window: raise the window (llama.cpp: a
                larger -c, or fewer --parallel slots, as each slot gets c / parallel tokens) or use
                a model with a longer one, then re-ask; re-asking unchanged cannot help
    fatal       a refusal (HTTP 4xx): re-asking unchanged fails the same way; fix what the message
                names, then re-ask
    timeout     no answer within the timeout: re-ask (a busy server may answer in time)
    transient / rate_limit / oversize / parse / truncated: re-ask

Re-asking is the retry command the caller names (`repair run NAME --retry-failed`, …), which
puts every one of these classes back, refusals included: the user asks again on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judgepanel.providers.context_limit import context_refusal
from judgepanel.store.editor import FailedCall

# the order causes are listed in: what needs a change first
_ORDER = (
    "context",
    "certificate",
    "fatal",
    "timeout",
    "transient",
    "rate_limit",
    "oversize",
    "truncated",
    "parse",
    "other",
)

_TIMED_OUT = re.compile(
    r"no (?:complete )?answer within"
)  # `providers.errors.timeout_error`, the runner's deadline


def _n(x: int | None) -> str:
    return "?" if x is None else f"{x:,}"


def context_advice(n: int, too_long: Mapping[str, tuple[int | None, int | None]], retry: str) -> str:
    """The advice for `n` requests refused as longer than the server's window; `too_long`: judge ->
    (longest refused prompt, the window) in tokens, as the servers said them."""
    figures = "; ".join(
        f"{judge}: the longest request was {_n(longest)} tokens, the server accepts {_n(window)}"
        for judge, (longest, window) in sorted(too_long.items())
    )
    requests = "request was" if n == 1 else "requests were"
    return (
        f"{n} {requests} refused as longer than the server's context window ({figures or 'no figures given'}). "
        "Asking again unchanged cannot help: raise the server's context (llama.cpp: a larger -c / "
        "JUDGEPANEL_LLM_CTX, or fewer --parallel slots, as each slot gets c / parallel tokens) or use a "
        f"model with a longer window, then `{retry}` asks again"
    )


def cause(f: FailedCall) -> str:
    cls = f.error_class or "other"
    if cls == "transient" and _TIMED_OUT.search(f.message):
        return "timeout"
    return cls if cls in _ORDER else "other"


@dataclass(frozen=True)
class CauseGroup:
    cause: str
    keys: tuple[str, ...]
    calls: tuple[FailedCall, ...]

    def sentence(self, retry: str, *, shown: int = 4) -> str:
        n = len(self.keys)
        names = ", ".join(self.keys[:shown]) + (f" and {n - shown} more" if n > shown else "")
        first = self.calls[0].message
        if self.cause == "context":
            refusals = [
                context_refusal(c.http_status or 400, c.raw_body or "", c.message) for c in self.calls
            ]
            longest = max((r.request_tokens for r in refusals if r and r.request_tokens), default=None)
            window = next((r.limit_tokens for r in refusals if r and r.limit_tokens), None)
            return (
                f"{n} refused as longer than the server's context window ({names}; the longest request "
                f"was {_n(longest)} tokens, the server accepts {_n(window)}): asking again unchanged cannot "
                "help; raise the server's context (llama.cpp: a larger -c / JUDGEPANEL_LLM_CTX, or fewer "
                f"--parallel slots) or use a model with a longer window, then `{retry}` asks again"
            )
        if self.cause == "fatal":
            return (
                f"{n} refused ({names}: {first}): asking again unchanged fails the same way; fix what the "
                f"message names (the server, the key, the model), then `{retry}` asks again"
            )
        what = {
            "certificate": "could not connect: TLS refused the server's certificate (trust its CA with "
            "SSL_CERT_FILE or SSL_CERT_DIR, or fix the certificate)",
            "timeout": "timed out",
            "transient": "failed on transient errors after the retries ran out",
            "rate_limit": "were rate-limited until the retries ran out",
            "oversize": "replied with more than the reply cap",
            "truncated": "were cut at the output cap",
            "parse": "answered with nothing usable",
            "other": "got no reply",
        }[self.cause]
        return f"{n} {what} ({names}: {first}): `{retry}` asks again"


def group_failures(failures: Mapping[str, FailedCall]) -> list[CauseGroup]:
    """The failed calls by cause, in `_ORDER`, keys sorted within a cause."""
    by: dict[str, list[tuple[str, FailedCall]]] = {}
    for key in sorted(failures):
        by.setdefault(cause(failures[key]), []).append((key, failures[key]))
    return [
        CauseGroup(c, tuple(k for k, _f in by[c]), tuple(f for _k, f in by[c])) for c in _ORDER if c in by
    ]


def describe_failures(failures: Mapping[str, FailedCall], retry: str) -> str:
    """One sentence per cause, joined with '; '."""
    return "; ".join(g.sentence(retry) for g in group_failures(failures))


def unanswered(keys: Sequence[str], failures: Mapping[str, FailedCall]) -> dict[str, FailedCall]:
    """`failures` restricted to `keys`, a key without a stored attempt counted as no reply."""
    return {k: failures.get(k, FailedCall(None, None, "no reply")) for k in keys}
