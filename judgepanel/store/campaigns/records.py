"""The rows the runner and the store hand each other: jobs leased out, attempts and outcomes in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JudgeRecord:
    """A judge as the store keeps it: canonical name, provider, model, non-secret parameters."""

    name: str
    provider: str
    model: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CampaignInfo:
    id: int
    name: str
    dataset: str
    protocol: str
    pairs: str | None
    rubric_version_id: int | None
    conditions: tuple[str, ...]
    dimensions: tuple[str, ...]
    repeats: int
    judges: tuple[JudgeRecord, ...]
    judge_ids: dict[str, int]
    spec: dict[str, Any]
    jobs: int
    added: int  # jobs inserted by this call (0 when the campaign was already planned)
    # `--turn` campaigns: units left out because an item has no assistant reply at that turn
    skipped_no_turn: int | None = None
    # per judge: which environment variable its key comes from (never the value) and the host it
    # is sent to ({"judge", "key_env", "host"}); filled in by the runner, which resolves them
    judge_keys: tuple[dict[str, str | None], ...] = ()
    # what `campaign create` has to say about the plan (e.g. conditions rendering the same prompt)
    warnings: tuple[str, ...] = ()

    def judge_names(self) -> dict[str, str]:
        """judge spec -> its short name (given or derived; `providers.spec.stored_judge_names`)."""
        from judgepanel.providers.spec import stored_judge_names

        return stored_judge_names([j.name for j in self.judges], self.spec)

    def as_dict(self) -> dict[str, Any]:
        return {
            "campaign": self.name,
            "dataset": self.dataset,
            "protocol": self.protocol,
            "judges": [j.name for j in self.judges],
            "judge_names": list(self.judge_names().values()),
            "judge_keys": list(self.judge_keys),
            "jobs": self.jobs,
            "added": self.added,
            **({"skipped_no_turn": self.skipped_no_turn} if self.skipped_no_turn is not None else {}),
        }


@dataclass(frozen=True)
class ItemText:
    item_id: int
    external_id: str
    input: str | None
    output: str | None
    meta: Mapping[str, Any] = field(default_factory=dict)  # conversation / reference live here


@dataclass(frozen=True)
class LeasedJob:
    id: int
    judge: str
    attempts: int
    item_id: int | None
    pair_id: int | None
    order: str | None
    condition: str | None
    dimension: str | None
    repeat: int
    units: tuple[ItemText, ...]  # the item, or the pair's two items in canonical (A, B) order


@dataclass(frozen=True)
class ClauseRow:
    clause_id: int
    clause_key: str
    dimension: str
    text: str


@dataclass(frozen=True)
class VerdictRow:
    parse_status: str  # ok | partial | failed
    parse_method: str | None
    value_presented: str | None
    value_canonical: str | None
    score: float | None
    rationale: str | None
    clauses: tuple[tuple[int, bool | None, str | None], ...] = ()  # (clause id, met, rationale)
    failure_kind: str | None = None  # failed/partial: unreadable | truncated | missing_clauses | ambiguous
    checked: frozenset[int] = frozenset()  # clause ids (of `clauses`) answered by a kept checker


@dataclass(frozen=True)
class AttemptRow:
    """One call (or one cache answer): the request as sent and the response as received."""

    job_id: int
    attempt: int
    request_hash: str
    template_name: str
    template_hash: str
    messages: list[dict[str, str]]
    params: dict[str, Any]
    ok: bool
    error_class: str | None = None
    http_status: int | None = None
    error_message: str | None = None
    raw_body: str | None = None
    text: str | None = None
    model_returned: str | None = None
    system_fingerprint: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    cached_from: int | None = None
    output_schema: dict[str, Any] | None = None  # the JSON schema sent for structured output
    finish_reason: str | None = None  # finish_reason / stop_reason as the provider returned it
    cache_read_tokens: int | None = None  # part of input_tokens read from the provider's prompt cache
    queued_ms: float | None = None  # from the start of the attempt until its request left (not latency)
    cache_write_tokens: int | None = None  # part of input_tokens written to it (Anthropic)


@dataclass(frozen=True)
class JobOutcome:
    """A job's final state, written with its attempts. `attempt` is the attempt the verdict reads."""

    job_id: int
    status: str  # done | failed
    attempts: int
    error_class: str | None = None
    verdict: VerdictRow | None = None


@dataclass
class Batch:
    attempts: list[AttemptRow] = field(default_factory=list)
    outcomes: list[JobOutcome] = field(default_factory=list)
    # budget reservations to release with these rows, one (campaign id, USD) per call (`store.budget`)
    released: list[tuple[int, float]] = field(default_factory=list)
    # request hashes whose in-flight claim goes with these rows (`store.claims`)
    unclaimed: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.attempts) + len(self.outcomes)


@dataclass(frozen=True)
class BatchResult:
    accepted: frozenset[int]  # job ids whose outcome was stored
    rejected: frozenset[int]  # job ids this worker no longer held; nothing of theirs was stored


@dataclass(frozen=True)
class CacheHit:
    response_id: int
    text: str | None
    model_returned: str | None
    system_fingerprint: str | None
    input_tokens: int | None
    output_tokens: int | None
    verdict: VerdictRow  # as the original was read (canonical value re-mapped by the caller)
    clause_keys: tuple[tuple[str, bool | None, str | None], ...]
    finish_reason: str | None = None
