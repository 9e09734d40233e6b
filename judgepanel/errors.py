"""The judgepanel error tree.

Every failure a user can see is one of these, so the CLI can map it to an exit code and one line::

    JudgepanelError                 exit 1 unless a subclass says otherwise
    ├── BadInput                    exit 2: the user's file, option or query is wrong; nothing was written
    ├── NotFound                    exit 2: a named dataset, pair set, campaign, rubric … does not exist
    ├── Interrupted                 exit 130: Ctrl-C / SIGTERM; what finished is stored
    └── ProviderError               one failed model call; `error_class` is what the runner stores
        ├── RateLimited             429 / quota-per-minute: wait (Retry-After) and retry
        ├── Transient               5xx, 529 overloaded, timeouts, connection resets: retry with back-off
        │   └── TimedOut            no complete answer within the timeout: retried at most once or twice
        ├── Fatal                   400/401/403/404, exhausted quota: never retried
        │   ├── Oversize            a reply over the judge's max_reply_bytes: not retried, only by --retry-failed
        │   ├── CertificateRefused  TLS refused the server's certificate: not retried; trust its CA
        │   │                       (SSL_CERT_FILE / SSL_CERT_DIR), then --retry-failed
        │   └── ContextTooLong      the prompt is longer than the server's context window: not retried;
        │                           cured by a larger window (or a shorter prompt), then --retry-failed
        └── ParseFailure            the reply arrived but holds no verdict; stored with its raw text

Provider errors carry no request headers, so an API key can never travel inside one.
"""

from __future__ import annotations

# what `--retry-failed` puts back: failures that another try may cure (an `oversize` reply is not
# retried by itself, as the same question tends to get the same huge answer, paid again; a
# `context` refusal is cured by raising the server's context, a `certificate` refusal by trusting
# the server's CA, after which the user asks again). `fatal` is put back by `--retry-fatal` only.
RETRY_FAILED = ("rate_limit", "transient", "oversize", "context", "certificate")


class JudgepanelError(Exception):
    """Base class; `exit_code` is what the CLI returns."""

    exit_code = 1


class BadInput(JudgepanelError):
    exit_code = 2


class NotFound(JudgepanelError):
    exit_code = 2


EXIT_INTERRUPTED = 130


class Interrupted(JudgepanelError):
    """The user stopped the command (exit 130, like a shell's Ctrl-C); the message says what is kept."""

    exit_code = EXIT_INTERRUPTED


class ProviderError(JudgepanelError):
    error_class = "fatal"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        raw_body: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.raw_body = raw_body


class RateLimited(ProviderError):
    error_class = "rate_limit"


class Transient(ProviderError):
    error_class = "transient"


class TimedOut(Transient):
    """No complete answer within the per-attempt deadline (stored as `transient`). Retried less
    than other transient errors: a call that ran out of time once usually runs out again."""


class Fatal(ProviderError):
    error_class = "fatal"


class Oversize(Fatal):
    """A reply body larger than the judge's `max_reply_bytes`: reading stopped at the cap, the size
    read so far and its hash are kept, nothing else. Not retried automatically (the same question
    usually gets the same huge answer, paid again); `campaign run --retry-failed` re-asks it."""

    error_class = "oversize"


class CertificateRefused(Fatal):
    """TLS refused the server's certificate (self-signed, expired, another host's, a CA not trusted
    here). No retry changes that, so it is not retried; `--retry-failed` re-asks it once the CA is
    trusted (`SSL_CERT_FILE` / `SSL_CERT_DIR`) or the certificate fixed."""

    error_class = "certificate"


class ContextTooLong(Fatal):
    """The server refused the request as longer than its context window (llama.cpp
    `exceed_context_size_error`, OpenAI / vLLM `context_length_exceeded`, Anthropic "prompt is too
    long"). Asking again changes nothing until the window is raised or the prompt shortened, so it
    is not retried; `--retry-failed` re-asks it after that change. `request_tokens` and
    `limit_tokens` are the server's figures when it gave them."""

    error_class = "context"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        raw_body: str | None = None,
        request_tokens: int | None = None,
        limit_tokens: int | None = None,
    ) -> None:
        super().__init__(message, status=status, raw_body=raw_body)
        self.request_tokens = request_tokens
        self.limit_tokens = limit_tokens


class ParseFailure(ProviderError):
    error_class = "parse"
