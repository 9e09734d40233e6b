"""The fake server's batch APIs: OpenAI Batch (files + batches) and Anthropic Message Batches.

Wire formats follow the providers' documentation:

* OpenAI: `POST /v1/files` (multipart, `purpose=batch`, a JSONL file of
  `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}` lines), `POST /v1/batches`
  (`input_file_id`, `endpoint`, `completion_window`, `metadata`), `GET /v1/batches[/{id}]`,
  `POST /v1/batches/{id}/cancel`, `GET /v1/files/{id}/content`. A finished batch has an output
  file (`{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}`)
  and, when some entries failed, an error file (non-2xx `response`, or `error.code`
  `batch_expired` / `batch_cancelled` with no response).
* Anthropic: `POST /v1/messages/batches` (`requests: [{custom_id, params}]`),
  `GET /v1/messages/batches[/{id}]`, `POST …/{id}/cancel`, `GET …/{id}/results` (JSONL of
  `{"custom_id", "result": {"type": "succeeded" | "errored" | "canceled" | "expired", …}}`).

Behaviour (attributes of `FakeServer`, also `--batch-*` options and `POST /_fake/batch?…`):
`batch_seconds` after creation a batch ends; with `batch_expire` it ends `expired` with only the
first half of its entries answered; `batch_lost_creates` = N makes the next N create calls create
the batch and then reset the connection (the client never learns the id: the crash window the
runner must survive without submitting twice). Per-entry errors come from the model-name faults
(`judge!500@0.2`: that share of entries fails with a 500 error entry). Cancelling ends the batch at
once with the unprocessed entries cancelled. Every create is counted (`stats()["batches"]`).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from collections.abc import Mapping


class BatchHost(Protocol):
    """What the batch APIs need from the server that hosts them (`FakeServer`): its URL, ids, the
    batch behaviour it was told, and one answer per entry, as its `/v1/chat/completions` or
    `/v1/messages` would give it (faults and all). A protocol, so this module imports no server."""

    batch_seconds: float
    batch_expire: bool
    batch_lost_creates: int

    @property
    def url(self) -> str: ...

    def next_id(self) -> str: ...

    def answer_entry(self, wire: str, payload: dict[str, Any], version: str) -> tuple[int, bytes]:
        """(HTTP status, JSON body) for one batch entry's request body."""
        ...


class LostReply(Exception):
    """The request was acted on but its answer is lost (the connection is reset)."""


@dataclass
class BatchReply:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created: int


@dataclass
class _Batch:
    wire: str
    id: str
    lines: list[dict[str, Any]]  # {"custom_id", "body"}
    created: float  # monotonic
    created_at: int  # epoch seconds
    meta: dict[str, Any] = field(default_factory=dict)  # OpenAI: input_file_id, endpoint, metadata
    cancelled: float | None = None
    ended: float | None = None
    status: str = "in_progress"
    results: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (kind, line)
    output_file: str | None = None
    error_file: str | None = None


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class _Call:
    """A request to one wire's batch routes, `rest` the path below the wire's batches prefix."""

    method: str
    rest: list[str]
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes


def _json(status: int, body: Any) -> BatchReply:
    return BatchReply(status, json.dumps(body).encode())


class FakeBatches:
    def __init__(self, server: BatchHost) -> None:
        self.server = server
        self.files: dict[str, _File] = {}
        self.batches: dict[str, _Batch] = {}
        self.creates: Counter[str] = Counter()
        self.entries: Counter[str] = Counter()  # custom ids submitted, over every batch

    def stats(self) -> dict[str, Any]:
        return {
            "created": dict(self.creates),
            "entries": sum(self.entries.values()),
            "duplicate_custom_ids": sum(1 for n in self.entries.values() if n > 1),
            "custom_ids": sorted(self.entries),
        }

    def reset(self) -> None:
        self.files.clear()
        self.batches.clear()
        self.creates.clear()
        self.entries.clear()

    # ---- routing -------------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> BatchReply | None:
        """The reply for a batch-API request, None when the path is not one."""
        path = urlsplit(target).path
        query = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}
        parts = path.strip("/").split("/")
        if path == "/v1/files" and method == "POST":
            return self._upload(headers, body)
        if len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content" and method == "GET":
            f = self.files.get(parts[2])
            if f is None:
                return self._oa_error(404, f"No such File object: {parts[2]}")
            return BatchReply(200, f.data, "application/octet-stream")
        if parts[:2] == ["v1", "batches"]:
            return self._openai(_Call(method, parts[2:], query, headers, body))
        if parts[:3] == ["v1", "messages", "batches"]:
            if not headers.get("anthropic-version"):
                return self._an_error(400, "anthropic-version: header is required")
            return self._anthropic(_Call(method, parts[3:], query, headers, body))
        return None

    def _forced(self, headers: Mapping[str, str], wire: str) -> BatchReply | None:
        fault = headers.get("x-fake-fault", "")
        if fault.isdigit():
            status = int(fault)
            return self._error(wire, status, "Injected fault.")
        return None

    def _error(self, wire: str, status: int, message: str) -> BatchReply:
        return self._oa_error(status, message) if wire == "openai" else self._an_error(status, message)

    def _create_body(self, call: _Call, wire: str) -> Any:
        """A create call's JSON body, or the `BatchReply` refusing it (an injected fault, not JSON)."""
        forced = self._forced(call.headers, wire)
        if forced is not None:
            return forced
        try:
            return json.loads(call.body)
        except ValueError:
            return self._error(wire, 400, "The request body is not valid JSON.")

    def _batch(self, call: _Call, wire: str) -> _Batch | BatchReply:
        """The batch `call` names (its first path part) on this wire, or the 404 reply."""
        found = self.batches.get(call.rest[0])
        if found is None or found.wire != wire:
            return self._error(wire, 404, f"No batch found with id '{call.rest[0]}'.")
        return found

    @staticmethod
    def _cancel(batch: _Batch) -> None:
        if batch.ended is None and batch.cancelled is None:
            batch.cancelled = time.monotonic()

    def _lose_create(self) -> None:
        if self.server.batch_lost_creates > 0:
            self.server.batch_lost_creates -= 1
            raise LostReply

    # ---- OpenAI --------------------------------------------------------------------------------

    def _oa_error(self, status: int, message: str) -> BatchReply:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return _json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def _file_object(self, f: _File) -> dict[str, Any]:
        return {
            "id": f.id,
            "object": "file",
            "bytes": len(f.data),
            "created_at": f.created,
            "filename": f.filename,
            "purpose": f.purpose,
            "status": "processed",
            "status_details": None,
        }

    def _upload(self, headers: Mapping[str, str], body: bytes) -> BatchReply:
        forced = self._forced(headers, "openai")
        if forced is not None:
            return forced
        ctype = headers.get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            return self._oa_error(400, "The request must be multipart/form-data.")
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode("latin-1") + body
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if "file" not in fields or "purpose" not in fields:
            return self._oa_error(400, "'file' and 'purpose' are required.")
        purpose = fields["purpose"][1].decode()
        if purpose != "batch":
            return self._oa_error(400, f"purpose {purpose!r} is not supported by this server")
        f = _File(
            f"file-{self.server.next_id()}",
            fields["file"][0] or "upload.jsonl",
            purpose,
            fields["file"][1],
            int(time.time()),
        )
        self.files[f.id] = f
        return _json(200, self._file_object(f))

    def _openai(self, call: _Call) -> BatchReply:
        method, rest, query = call.method, call.rest, call.query
        if not rest and method == "POST":
            return self._oa_create(call)
        if not rest and method == "GET":
            listed = sorted(self.batches.values(), key=lambda b: b.created, reverse=True)
            listed = [b for b in listed if b.wire == "openai"]
            if "after" in query:
                ids = [b.id for b in listed]
                listed = listed[ids.index(query["after"]) + 1 :] if query["after"] in ids else []
            limit = int(query.get("limit", "20"))
            page = [self._oa_object(b) for b in listed[:limit]]
            return _json(
                200,
                {
                    "object": "list",
                    "data": page,
                    "first_id": page[0]["id"] if page else None,
                    "last_id": page[-1]["id"] if page else None,
                    "has_more": len(listed) > limit,
                },
            )
        batch = self._batch(call, "openai")
        if isinstance(batch, BatchReply):
            return batch
        if len(rest) == 2 and rest[1] == "cancel" and method == "POST":
            self._cancel(batch)
            return _json(200, self._oa_object(batch))
        if len(rest) == 1 and method == "GET":
            forced = self._forced(call.headers, "openai")
            return forced or _json(200, self._oa_object(batch))
        return self._oa_error(404, "no such route")

    def _oa_create(self, call: _Call) -> BatchReply:
        req = self._create_body(call, "openai")
        if isinstance(req, BatchReply):
            return req
        f = self.files.get(str(req.get("input_file_id")))
        if f is None:
            return self._oa_error(400, f"Input file {req.get('input_file_id')} not found.")
        endpoint = req.get("endpoint")
        if endpoint != "/v1/chat/completions" or req.get("completion_window") != "24h":
            return self._oa_error(400, "endpoint must be /v1/chat/completions and completion_window 24h")
        lines: list[dict[str, Any]] = []
        seen: set[str] = set()
        for n, raw in enumerate(f.data.decode().splitlines(), 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                return self._oa_error(400, f"line {n} of the input file is not JSON")
            cid = line.get("custom_id")
            if not isinstance(cid, str) or cid in seen:
                return self._oa_error(400, f"line {n}: custom_id missing or duplicated")
            if line.get("method") != "POST" or line.get("url") != endpoint:
                return self._oa_error(400, f"line {n}: method must be POST and url {endpoint}")
            seen.add(cid)
            lines.append({"custom_id": cid, "body": line.get("body")})
        batch = self._new("openai", f"batch_{self.server.next_id()}", lines)
        batch.meta = {
            "input_file_id": f.id,
            "endpoint": endpoint,
            "metadata": req.get("metadata") or None,
        }
        self._lose_create()
        return _json(200, self._oa_object(batch))

    def _oa_object(self, b: _Batch) -> dict[str, Any]:
        self._advance(b)
        done = [k for k, _ in b.results]
        status = {"in_progress": "in_progress", "ended": "completed"}.get(b.status, b.status)
        ended_at = int(b.created_at + (b.ended - b.created)) if b.ended is not None else None
        return {
            "id": b.id,
            "object": "batch",
            "endpoint": b.meta.get("endpoint"),
            "errors": None,
            "input_file_id": b.meta.get("input_file_id"),
            "completion_window": "24h",
            "status": status,
            "output_file_id": b.output_file,
            "error_file_id": b.error_file,
            "created_at": b.created_at,
            "in_progress_at": b.created_at,
            "expires_at": b.created_at + 86400,
            "finalizing_at": ended_at,
            "completed_at": ended_at if status == "completed" else None,
            "failed_at": None,
            "expired_at": ended_at if status == "expired" else None,
            "cancelling_at": ended_at if status == "cancelled" else None,
            "cancelled_at": ended_at if status == "cancelled" else None,
            "request_counts": {
                "total": len(b.lines),
                "completed": done.count("succeeded"),
                "failed": len(done) - done.count("succeeded"),
            },
            "metadata": b.meta.get("metadata"),
        }

    # ---- Anthropic -----------------------------------------------------------------------------

    def _an_error(self, status: int, message: str = "Injected fault.") -> BatchReply:
        kind = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
        return _json(status, {"type": "error", "error": {"type": kind, "message": message}})

    def _anthropic(self, call: _Call) -> BatchReply:
        method, rest, query, headers = call.method, call.rest, call.query, call.headers
        if not rest and method == "POST":
            req = self._create_body(call, "anthropic")
            if isinstance(req, BatchReply):
                return req
            requests = req.get("requests")
            if not isinstance(requests, list) or not requests:
                return self._an_error(400, "requests: field required")
            ids = [r.get("custom_id") for r in requests if isinstance(r, dict)]
            if (
                len(ids) != len(requests)
                or len(set(ids)) != len(ids)
                or not all(isinstance(i, str) for i in ids)
            ):
                return self._an_error(400, "requests: every custom_id must be a unique string")
            if not all(isinstance(r.get("params"), dict) for r in requests):
                return self._an_error(400, "requests: params required")
            lines = [{"custom_id": r["custom_id"], "body": r["params"]} for r in requests]
            batch = self._new("anthropic", f"msgbatch_{self.server.next_id()}", lines)
            batch.meta = {"version": headers.get("anthropic-version", "")}
            self._lose_create()
            return _json(200, self._an_object(batch))
        if not rest and method == "GET":
            listed = sorted(
                (b for b in self.batches.values() if b.wire == "anthropic"),
                key=lambda b: b.created,
                reverse=True,
            )
            limit = int(query.get("limit", "20"))
            page = [self._an_object(b) for b in listed[:limit]]
            return _json(
                200,
                {
                    "data": page,
                    "has_more": len(listed) > limit,
                    "first_id": page[0]["id"] if page else None,
                    "last_id": page[-1]["id"] if page else None,
                },
            )
        found = self._batch(call, "anthropic")
        if isinstance(found, BatchReply):
            return found
        batch = found
        if len(rest) == 2 and rest[1] == "cancel" and method == "POST":
            self._cancel(batch)
            return _json(200, self._an_object(batch))
        if len(rest) == 2 and rest[1] == "results" and method == "GET":
            self._advance(batch)
            if batch.ended is None:
                return self._an_error(404, "Batch results are not yet available.")
            data = "".join(json.dumps(line) + "\n" for _, line in batch.results)
            return BatchReply(200, data.encode(), "application/binary")
        if len(rest) == 1 and method == "GET":
            forced = self._forced(headers, "anthropic")
            return forced or _json(200, self._an_object(batch))
        return self._an_error(404, "no such route")

    def _an_object(self, b: _Batch) -> dict[str, Any]:
        self._advance(b)
        kinds = Counter(k for k, _ in b.results)
        ended_at = _iso(b.created_at + (b.ended - b.created)) if b.ended is not None else None
        return {
            "id": b.id,
            "type": "message_batch",
            "processing_status": "ended" if b.ended is not None else "in_progress",
            "request_counts": {
                "processing": len(b.lines) - len(b.results),
                "succeeded": kinds["succeeded"],
                "errored": kinds["errored"],
                "canceled": kinds["canceled"],
                "expired": kinds["expired"],
            },
            "ended_at": ended_at,
            "created_at": _iso(b.created_at),
            "expires_at": _iso(b.created_at + 86400),
            "archived_at": None,
            "cancel_initiated_at": _iso(b.created_at) if b.cancelled is not None else None,
            "results_url": f"{self.server.url}/v1/messages/batches/{b.id}/results" if b.ended else None,
        }

    # ---- processing ----------------------------------------------------------------------------

    def _new(self, wire: str, ident: str, lines: list[dict[str, Any]]) -> _Batch:
        batch = _Batch(wire, ident, lines, time.monotonic(), int(time.time()))
        self.batches[ident] = batch
        self.creates[wire] += 1
        for line in lines:
            self.entries[line["custom_id"]] += 1
        return batch

    def _advance(self, b: _Batch) -> None:
        """End the batch when its time has come (or it was cancelled) and compute its results."""
        if b.ended is not None:
            return
        now = time.monotonic()
        if b.cancelled is not None:
            answered, rest_kind, status = 0, "canceled", "cancelled"
        elif now - b.created >= self.server.batch_seconds:
            if self.server.batch_expire:
                answered, rest_kind, status = len(b.lines) // 2, "expired", "expired"
            else:
                answered, rest_kind, status = len(b.lines), "", "ended"
        else:
            return
        b.ended, b.status = now, status
        for n, line in enumerate(b.lines):
            b.results.append(self._answer(b, line) if n < answered else self._unanswered(b, line, rest_kind))
        if b.wire == "openai":
            ok = [line for kind, line in b.results if kind == "succeeded"]
            bad = [line for kind, line in b.results if kind != "succeeded"]
            b.output_file = self._store_file(b, "output", ok) if ok else None
            b.error_file = self._store_file(b, "error", bad) if bad else None

    def _store_file(self, b: _Batch, kind: str, lines: list[dict[str, Any]]) -> str:
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        f = _File(
            f"file-{self.server.next_id()}", f"{b.id}_{kind}.jsonl", f"batch_{kind}", data, int(time.time())
        )
        self.files[f.id] = f
        return f.id

    def _answer(self, b: _Batch, line: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        payload = line["body"] if isinstance(line["body"], dict) else {}
        status, raw = self.server.answer_entry(b.wire, payload, str(b.meta.get("version", "")))
        body = json.loads(raw)
        ident = self.server.next_id()
        if b.wire == "openai":
            out = {
                "id": f"batch_req_{ident}",
                "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"req_{ident}", "body": body},
                "error": None,
            }
            return ("succeeded" if status == 200 else "errored"), out
        if status == 200:
            return "succeeded", {
                "custom_id": line["custom_id"],
                "result": {"type": "succeeded", "message": body},
            }
        error = {"type": "error", "error": body.get("error"), "request_id": f"req_{ident}"}
        return "errored", {"custom_id": line["custom_id"], "result": {"type": "errored", "error": error}}

    def _unanswered(self, b: _Batch, line: dict[str, Any], kind: str) -> tuple[str, dict[str, Any]]:
        if b.wire == "anthropic":
            return kind, {"custom_id": line["custom_id"], "result": {"type": kind}}
        code, message = (
            ("batch_expired", "This request could not be executed before the completion window expired.")
            if kind == "expired"
            else ("batch_cancelled", "This request was cancelled before it was executed.")
        )
        return kind, {
            "id": f"batch_req_{self.server.next_id()}",
            "custom_id": line["custom_id"],
            "response": None,
            "error": {"code": code, "message": message},
        }
