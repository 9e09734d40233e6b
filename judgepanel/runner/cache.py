"""The request hash: what makes two requests "the same" for the cache.

Like Inspect AI's model cache, the key is built from the whole request MINUS an explicit list of
fields that cannot change the answer, rather than from a hand-picked list of fields that do: a
new sampling parameter is then part of the key by default and can never be forgotten.

Covered: provider, model, endpoint (`base_url`: another server may serve another build of the
"same" model), every output-relevant parameter (temperature, top_p, max_tokens, seed, structured
output on/off, the simulator's answer knobs …), the messages, the output schema and its name, and
the repeat index (so `--repeats N` asks N times instead of answering samples 2…N from sample 1;
Inspect keys on the epoch for the same reason), the spec's `revision=` label (a parameter, never
sent), and for `base_url` judges the model the server says it serves (`served_model`): a local
server answers with whatever weights it has loaded, whatever `model` the request names.

Excluded (`EXCLUDED_PARAMS`): how a call is made, not what it answers — timeouts, client-side
rate limits and concurrency, prices, and the simulator's injected latency and error rate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from judgepanel.providers.base import ChatRequest
from judgepanel.providers.spec import OPERATIONAL_KEYS

EXCLUDED_PARAMS: frozenset[str] = frozenset(OPERATIONAL_KEYS) | {"timeout", "max_retries"}
KEY_VERSION = 1


# A deliberate mirror (issue 31 §4): `request_hash` is the hash of `canonical_request` and takes
# its keywords, so the two signatures repeat.
def request_hash(
    *,
    provider: str,
    model: str,
    base_url: str | None,
    request: ChatRequest,
    repeat: int,
    served_model: str | None = None,
) -> str:
    """sha256 of the canonical JSON of everything that can change the reply."""
    return hashlib.sha256(
        canonical_request(
            provider=provider,
            model=model,
            base_url=base_url,
            request=request,
            repeat=repeat,
            served_model=served_model,
        ).encode()
    ).hexdigest()


def canonical_request(
    *,
    provider: str,
    model: str,
    base_url: str | None,
    request: ChatRequest,
    repeat: int,
    served_model: str | None = None,
) -> str:
    # `served_model` enters the key only when known, so the keys of other judges stay as they were.
    served = {} if served_model is None else {"served_model": served_model}
    return json.dumps(
        {
            **served,
            "v": KEY_VERSION,
            "provider": provider,
            "model": model,
            "base_url": base_url,
            "params": output_params(request.params),
            "messages": request.messages,
            "schema": request.schema,
            "schema_name": request.schema_name,
            "repeat": repeat,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )


def output_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sorted(params.items()) if k not in EXCLUDED_PARAMS}
