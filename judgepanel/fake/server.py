"""A fake OpenAI + Anthropic server on 127.0.0.1: real HTTP/1.1, real wire formats, the sim brain.

Tests and benchmarks point the real SDKs at it, so every byte goes through the same code paths as
against the real APIs. It is a plain asyncio-streams HTTP/1.1 server (keep-alive, many concurrent
connections, no framework) that answers

* `POST /v1/chat/completions` (OpenAI Chat Completions; `response_format` json_schema → the content
  is the JSON object; `usage`, `system_fingerprint`, `model`, `id`, `finish_reason`),
* `POST /v1/messages` (Anthropic Messages; a forced tool (`tool_choice` tool/any) → a `tool_use`
  block whose `input` is the JSON object; `usage`, `stop_reason`; the `anthropic-version` header is
  required, and from 2026-10-21 on `temperature`/`top_p`/`top_k` are refused with 400 as the real
  API does),
* `GET /v1/models` (OpenAI and Anthropic list shapes): the served model, `served_model` when set,
  else `sim`,
* the batch APIs: OpenAI Batch (`/v1/files`, `/v1/batches`) and Anthropic Message Batches
  (`/v1/messages/batches`), with processing time, expiry, per-entry errors and lost creates
  (see `judgepanel.fake.batch`),
* `GET /_fake/stats`, `GET /_fake/requests?limit=N`, `POST /_fake/reset`: what it received;
  `POST /_fake/batch?seconds=S&expire=0|1&lost_creates=N` changes the batch behaviour;
  `POST /_fake/answers` with a JSON list of `{"when": TEXT, "text": REPLY}` tells it what to answer:
  a chat request whose final user message contains `when` (first rule that matches) gets `text` as
  its reply, as prose (no structured object), instead of the sim brain's answer; `[]` clears the rules;
  `POST /_fake/context?tokens=N` sets the context window (`--context`; `judgepanel.fake.llamacpp`).

A chat request that is another tool's grader prompt (Inspect AI's model-graded scorers, promptfoo's
`llm-rubric`) is answered in that grader's format, from the sim brain's score (`judgepanel.fake.graders`).

`served_model` imitates a local server (llama.cpp, vLLM with one model) that ignores the request's
`model`: when set, `/v1/models` lists only it, replies report it as `model`, and the sim brain
answers as that model whatever the request names. Change it between runs to swap "the weights".

Answers come from the simulated judge, `judgepanel.simjudge` (model returned as `sim/<model>`, fingerprint
`judgepanel-sim-v1`), so they are deterministic per request.

Injected behaviour
------------------
Fault names: `429` (Retry-After seconds + retry-after-ms), `429s` (Retry-After seconds only),
`quota` (OpenAI: 429 insufficient_quota; Anthropic: 402 billing_error), `500`, `502`, `503`, `504`, `529` (overloaded,
Anthropic error body), `400`, `401`, `403`, `404`, `422`, `hang` (no answer until the client gives
up), `reset` (TCP RST, no answer), `truncated` (200, JSON cut in half), `html` (200, an HTML page),
`html502` (502, an HTML proxy page), `missing` (200, valid JSON without `choices`/`content`),
`429far` (429 whose `Retry-After` is an HTTP-date in 2099), `429inf` (429 with `retry-after-ms: inf`
and `retry-after: 86400`), `drip` (a 200 whose body arrives one byte every `drip` seconds, default
2: each read is quick, the whole answer takes minutes), `length` (200, the reply cut to a third with
`finish_reason: length` / `stop_reason: max_tokens`, as a model stopped at its output cap),
`echo` (a normal 200 that echoes the caller's key — `Authorization: Bearer …` or `x-api-key` — in
the reply text and every rationale, in `model` and in OpenAI's `system_fingerprint`, as a hostile
or buggy server might), `echoforms` (the same, but the key in every reversible form: base64,
base64url, hex, reversed, upper- and lower-case, `-` → `_`, split by a space, a newline, `.` and
`/`, with `...` inserted; `model` carries the base64 form), `huge` (a valid 200 answer padded to
`huge` bytes, default 64 MB, sent with its Content-Length in 64 KB writes, never held in memory
whole), `endless` (a 200 whose chunked body never ends: spaces, 64 KB a chunk, until the client
hangs up), `gzipbomb` (the `huge` answer gzip-compressed: a few hundred KB on the wire that
decode to `huge` bytes, chunked, `content-encoding: gzip`), `echo401` (a 401 whose error message carries the key in those forms),
and the hostile rewrites of `judgepanel.fake.faults` (`gzipgzip`, `surrogate`, `bigtokens`,
`negtokens`, `nousage`, `echoencoded`, …: see there).

Choosing a fault, first match wins:

1. the request header `x-fake-fault: NAME` (one call, e.g. via the SDK's `extra_headers`);
2. a model-name suffix after `!`, comma separated: `judge!500` (always), `judge!429@0.1` (10 %,
   seeded), `judge!503x2` (the first 2 attempts of each distinct request body, then success), and
   settings `judge!position_bias=0.3,noise=0.1,latency=0.2,retry_after=2.5` (sim knobs, this
   model's latency, the wait its injected 429s announce); the brain sees the model as `judge`;
3. the server-wide rates (`--fault 500=0.02 --fault 429=0.01`).

Random draws are seeded by `--seed`, the request body and how many times that body was seen, so
they do not depend on arrival order and a retry gets a fresh draw.

A server-side RPM limit (`--rpm 3000`) is a token bucket refilled at rpm/60 per second holding at
most `--burst` requests (default one second's worth, as providers enforce limits over short
windows); a request finding it empty gets 429 with Retry-After / retry-after-ms saying when the next
token comes, and is not otherwise processed. Latency is uniform in [latency − jitter, latency +
jitter]; `x-fake-latency: SECONDS` overrides it for one request.

Prompt caching is imitated (`judgepanel.fake.cache`): per model, prefixes seen in the
last `cache_ttl` seconds are reported as cached tokens, automatically on the OpenAI wire
(`usage.prompt_tokens_details.cached_tokens`, from 1,024 tokens in 128-token steps) and on the
Anthropic wire only up to content blocks marked `cache_control` (`cache_read_input_tokens`,
`cache_creation_input_tokens`, `input_tokens` the rest), above each model's documented minimum
(`cache_min_tokens` overrides both wires' minimums; `prompt_cache=False` / `--no-prompt-cache`
turns it off, every cache count then 0).

Every request is recorded (path, status, fault, model, headers, body, arrival time), the last
`record_limit` in full and all of them in counters, so tests can prove a key was sent over the wire
and what parameters were.

Run it as a process (the first stdout line is its URL), as `judgepanel fake-server` or::

    python -m judgepanel.fake.server --port 0 --latency 1.0 --jitter 0.2 --rpm 3000

or in-process: `with FakeServer(latency=0.1) as fake: fake.url`, or `async with FakeServer() as fake`.
The OpenAI base_url is `fake.url + "/v1"`, the Anthropic one `fake.url`. In-process, `tls=` (a server
`ssl.SSLContext`) serves HTTPS instead, for the tests of the clients' certificate checks.

Boundary: this module reads requests, routes them and keeps what it saw (and runs the server, in a
thread or as a process); the replies are built by its bases, `fake.formats` (the wire formats) and
`fake.injection` (the injected faults), and written by `fake.http` (the transport).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import parse_qs, urlsplit

from judgepanel.fake.batch import FakeBatches, LostReply
from judgepanel.fake.cache import DEFAULT_TTL, PromptCache
from judgepanel.fake.faults import HOSTILE, rewrite
from judgepanel.fake.formats import _SIM_KNOBS, WireFormats
from judgepanel.fake.http import _drip, _encode, _endless, _gzip_bomb, _huge, _NoReply, _Reply, _reset
from judgepanel.fake.injection import (
    _AFTER_ANSWER,
    FAULTS,
    FaultInjection,
    _caller_key,
    _cut_at_length,
    _echo,
    _malformed,
)
from judgepanel.fake.llamacpp import context_refusal

# Newsroom words for the synthetic articles and summaries that tests and benchmarks send here: the
# sim brain scores a summary by its word overlap with the article.
SAMPLE_WORDS = (
    "council",
    "river",
    "budget",
    "school",
    "bridge",
    "mayor",
    "storm",
    "harbour",
    "vote",
    "rail",
    "museum",
    "festival",
    "police",
    "market",
    "energy",
    "tax",
    "hospital",
    "court",
    "library",
    "station",
    "season",
    "forecast",
)


@dataclass
class RequestRecord:
    """One request as the server saw it. `headers` are lower-cased, as received."""

    method: str
    path: str
    status: int | None  # None: no answer (hang, reset)
    fault: str | None
    model: str | None
    headers: dict[str, str]
    body: str
    arrived: float
    seconds: float = 0.0


def _parse_model(raw: str) -> tuple[str, list[str], dict[str, float]]:
    """`judge!500@0.1,503x2,position_bias=0.3` → ("judge", ["500@0.1", "503x2"], {"position_bias": 0.3})."""
    name, bang, suffix = raw.partition("!")
    if not bang:
        return raw, [], {}
    faults: list[str] = []
    knobs: dict[str, float] = {}
    for token in filter(None, (t.strip() for t in suffix.split(","))):
        key, eq, value = token.partition("=")
        if eq:
            with contextlib.suppress(ValueError):
                knobs[key] = float(value)
        else:
            faults.append(token)
    return name, faults, knobs


class FakeServer(FaultInjection, WireFormats):
    """The fake provider server. See the module docstring for behaviour and controls."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        jitter: float = 0.0,
        rpm: float | None = None,
        burst: float | None = None,
        faults: Mapping[str, float] | None = None,
        seed: int = 0,
        retry_after: float = 1.0,
        hang: float = 600.0,
        sim: Mapping[str, float] | None = None,
        record_limit: int = 20_000,
        served_model: str | None = None,
        drip: float = 2.0,
        huge: int = 64 * 1024 * 1024,
        prompt_cache: bool = True,
        cache_min_tokens: int | None = None,
        cache_ttl: float = DEFAULT_TTL,
        refuse: Sequence[str] = (),
        batch_seconds: float = 1.0,
        batch_expire: bool = False,
        batch_lost_creates: int = 0,
        context_tokens: int = 0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        unknown = set(faults or {}) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s): {', '.join(sorted(unknown))}; known: {', '.join(FAULTS)}")
        bad_knobs = set(sim or {}) - set(_SIM_KNOBS)
        if bad_knobs:
            raise ValueError(f"unknown sim setting(s): {', '.join(sorted(bad_knobs))}")
        self.host, self.port = host, port
        self.tls = tls
        self.latency, self.jitter = latency, jitter
        self.rpm = rpm
        self.burst = burst if burst is not None else (max(1.0, rpm / 60) if rpm else None)
        self.faults = dict(faults or {})
        self.seed = seed
        self.retry_after = retry_after
        self.hang = hang
        self.sim = dict(sim or {})
        self.served_model = served_model
        self.drip = drip
        self.huge = huge  # bytes of a `huge` reply
        self.prompt_cache = PromptCache(ttl=cache_ttl, min_tokens=cache_min_tokens) if prompt_cache else None
        # Chat Completions parameters this "server" does not support: a request carrying one gets
        # the 400 an OpenAI-compatible server gives (as vLLM or llama.cpp do for what they lack)
        self.refuse = tuple(refuse)
        self.records: deque[RequestRecord] = deque(maxlen=record_limit)
        self.counts: Counter[tuple[str, int | None]] = Counter()
        self.fault_counts: Counter[str] = Counter()
        # what a real provider would bill: tokens of every chat reply sent (tests compare costs with it)
        self.billed: Counter[str] = Counter()
        self._seen: dict[bytes, int] = {}
        self._tokens = float(self.burst or 0.0)
        self._refilled = time.monotonic()
        self._rng = random.Random(seed)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self.connections = 0
        self.batch_seconds = batch_seconds  # a batch ends this long after it was created
        self.batch_expire = batch_expire  # … as `expired`, with half its entries unanswered
        self.batch_lost_creates = batch_lost_creates  # create the next N batches, then reset
        self.batch_api = FakeBatches(self)
        self.answers: list[tuple[str, str]] = []  # (when, text): scripted replies, see `_scripted`
        self.context_tokens = context_tokens  # a local server's context per slot (`fake.llamacpp`); 0: none

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    async def start(self) -> str:
        self._server = await asyncio.start_server(
            self._connection, self.host, self.port, backlog=1024, limit=2**20, ssl=self.tls
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()
        return self.url

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> FakeServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def start_in_thread(self) -> str:
        """Serve from a daemon thread with its own event loop; returns the URL."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.aclose())
            loop.close()

        self._thread = threading.Thread(target=run, name="judgepanel-fakeserver", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self.url

    def stop(self) -> None:
        if self._thread is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> FakeServer:
        self.start_in_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what it saw ---------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        by_path: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        for (path, status), n in list(self.counts.items()):  # a snapshot: the server thread may be counting
            by_path[path] += n
            by_status[str(status) if status is not None else "none"] += n
        return {
            "requests": sum(self.counts.values()),
            "by_path": dict(by_path),
            "by_status": dict(by_status),
            "by_fault": dict(list(self.fault_counts.items())),
            "connections": self.connections,
            "batches": self.batch_api.stats(),
            "billed": dict(self.billed),
        }

    def recent(self, limit: int | None = None) -> list[RequestRecord]:
        records = list(self.records)
        return records[-limit:] if limit else records

    def reset(self) -> None:
        self.records.clear()
        self.counts.clear()
        self.fault_counts.clear()
        self.billed.clear()
        self._seen.clear()
        if self.prompt_cache is not None:
            self.prompt_cache.clear()
        self.connections = 0
        self._tokens = float(self.burst or 0.0)
        self._refilled = time.monotonic()
        self.batch_api.reset()

    # ---- HTTP ----------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, version = lines[0].split(" ", 2)
                except ValueError:
                    return
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        key, value = line.split(":", 1)
                        headers[key.strip().lower()] = value.strip()
                body = await self._read_body(reader, headers)
                if body is None:
                    return
                keep_alive = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
                path = urlsplit(target).path
                if path.startswith("/_fake/"):  # control requests are answered, not recorded
                    writer.write(_encode(self._control(method, target, body), keep_alive, self.next_id()))
                    continue
                text = body[:8192].decode("utf-8", "replace")
                record = RequestRecord(method, path, None, None, None, headers, text, time.time())
                self.records.append(record)
                try:
                    reply = await self._dispatch(method, target, headers, body, record, reader)
                except _NoReply as why:
                    record.seconds = time.time() - record.arrived
                    self.counts[(record.path, None)] += 1
                    if str(why) == "reset":
                        _reset(writer)
                    return
                record.status = reply.status
                record.seconds = time.time() - record.arrived
                self.counts[(record.path, reply.status)] += 1
                if reply.drip > 0:
                    await _drip(writer, _encode(reply, keep_alive, self.next_id()), reply)
                    continue
                if reply.pad or reply.endless:
                    if reply.endless:
                        sent = await _endless(writer)
                    elif reply.gzip:
                        sent = await _gzip_bomb(writer, reply)
                    else:
                        sent = await _huge(writer, reply, keep_alive)
                    if not sent:
                        return
                    continue
                writer.write(_encode(reply, keep_alive, self.next_id()))
                if writer.transport.get_write_buffer_size() > 65536:
                    await writer.drain()
                if not keep_alive:
                    await writer.drain()
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _read_body(self, reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes | None:
        try:
            if headers.get("transfer-encoding", "").lower() == "chunked":
                chunks: list[bytes] = []
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
                    if size == 0:
                        await reader.readuntil(b"\r\n")
                        return b"".join(chunks)
                    chunks.append(await reader.readexactly(size))
                    await reader.readexactly(2)
            length = int(headers.get("content-length", "0") or 0)
            return await reader.readexactly(length) if length else b""
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, ConnectionError):
            return None

    async def _dispatch(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes,
        record: RequestRecord,
        reader: asyncio.StreamReader,
    ) -> _Reply:
        path = record.path
        azure = re.fullmatch(r"/openai/deployments/[^/]+/chat/completions", path)
        if azure is not None:
            # Azure OpenAI: the deployment is in the path and the api-version in the query
            if "api-version=" not in target:
                return self._error("openai", 404, "Resource not found (api-version is required).")
            path = "/v1/chat/completions"
        if method == "GET" and path == "/v1/models":
            return self._models(headers)
        if path.startswith(("/v1/files", "/v1/batches", "/v1/messages/batches")):
            try:
                answer = self.batch_api.handle(method, target, headers, body)
            except LostReply:
                raise _NoReply("reset") from None
            if answer is not None:
                return _Reply(answer.status, answer.body, content_type=answer.content_type)
        if method != "POST" or path not in ("/v1/chat/completions", "/v1/messages"):
            return _Reply(404, json.dumps({"error": {"message": f"no route {method} {path}"}}).encode())
        wire = "openai" if path == "/v1/chat/completions" else "anthropic"
        try:
            payload = json.loads(body)
            if not isinstance(payload, dict):
                raise ValueError("body is not an object")
        except ValueError:
            return self._error(wire, 400, "The request body is not valid JSON.")
        raw_model = str(payload.get("model", ""))
        model, model_faults, knobs = _parse_model(raw_model)
        record.model = raw_model
        if self.served_model:
            model = self.served_model  # a one-model server answers with what it runs, whatever is asked

        limited = self._take_token()
        if limited is not None:
            record.fault = "rpm"
            self.fault_counts["rpm"] += 1
            return self._rate_limited(wire, limited)

        digest = hashlib.blake2b(body, digest_size=16, key=str(self.seed).encode()[:64]).digest()
        attempt = self._seen.get(digest, 0)
        self._seen[digest] = attempt + 1
        fault = self._choose_fault(headers, model_faults, digest, attempt)
        if fault is not None:
            record.fault = fault
            self.fault_counts[fault] += 1

        delay = knobs.get("latency", self.latency)
        if "x-fake-latency" in headers:
            with contextlib.suppress(ValueError):
                delay = float(headers["x-fake-latency"])
        if self.jitter:
            delay += self._rng.uniform(-self.jitter, self.jitter)
        if delay > 0 and fault not in ("hang", "reset"):
            await asyncio.sleep(delay)

        if fault is not None and fault not in _AFTER_ANSWER:
            return await self._fault_reply(wire, fault, headers, reader, knobs)
        refused = context_refusal(wire, payload, int(knobs.get("context", self.context_tokens)))
        if refused is not None:
            return _Reply(400, refused)
        if wire == "openai":
            reply = self._openai(payload, model, knobs)
        else:
            version = headers.get("anthropic-version")
            if not version:
                return self._error(wire, 400, "anthropic-version: header is required")
            reply = self._anthropic(payload, model, knobs, version)
        if fault is None or reply.status != 200:
            return reply
        if fault == "drip":
            reply.drip = knobs.get("drip", self.drip)
            return reply
        if fault == "length":
            return _cut_at_length(wire, reply)
        if fault == "echo":
            return _echo(reply, _caller_key(headers))
        if fault == "echoforms":
            return _echo(reply, _caller_key(headers), forms=True)
        if fault == "huge":
            reply.pad = int(knobs.get("huge", self.huge))
            return reply
        if fault == "endless":
            reply.endless = True
            return reply
        if fault == "gzipbomb":
            reply.pad = int(knobs.get("huge", self.huge))
            reply.gzip = True
            return reply
        if fault in HOSTILE:
            body, extra = rewrite(
                fault, wire, reply.body, _caller_key(headers), int(knobs.get("huge", self.huge))
            )
            return _Reply(200, body, reply.headers + extra)
        return _malformed(fault, reply)

    def answer_entry(self, wire: str, payload: dict[str, Any], version: str) -> tuple[int, bytes]:
        """One batch entry's answer (`fake.batch.BatchHost`): as a direct call would get it, with
        the model-name faults drawn per distinct body; error faults become error entries."""
        model, faults, knobs = _parse_model(str(payload.get("model", "")))
        if self.served_model:
            model = self.served_model
        raw = json.dumps(payload, sort_keys=True).encode()
        digest = hashlib.blake2b(raw, digest_size=16, key=str(self.seed).encode()[:64]).digest()
        attempt = self._seen.get(digest, 0)
        self._seen[digest] = attempt + 1
        fault = self._choose_fault({}, faults, digest, attempt)
        if fault is not None and fault.rstrip("s").isdigit():
            reply = self._error(wire, int(fault.rstrip("s")), None)
        elif wire == "openai":
            reply = self._openai(payload, model, knobs)
        else:
            reply = self._anthropic(payload, model, knobs, version)
        if fault in HOSTILE and reply.status == 200 and not fault.startswith(("gzip", "br")):
            return reply.status, rewrite(fault, wire, reply.body, "", self.huge)[0]
        return reply.status, reply.body

    def _set_answers(self, body: bytes) -> _Reply:
        try:
            rules = json.loads(body or b"[]")
            answers = [(str(r["when"]), str(r["text"])) for r in rules]
        except (ValueError, TypeError, KeyError):
            return _Reply(400, b'{"error": {"message": "expected a JSON list of {when, text}"}}')
        self.answers = answers
        return _Reply(200, json.dumps({"answers": len(answers)}).encode())

    def _control(self, method: str, target: str, body: bytes = b"") -> _Reply:
        parts = urlsplit(target)
        if parts.path == "/_fake/answers" and method == "POST":
            return self._set_answers(body)
        if parts.path == "/_fake/stats":
            return _Reply(200, json.dumps(self.stats()).encode())
        if parts.path == "/_fake/requests":
            limit = int(parse_qs(parts.query).get("limit", ["0"])[0] or 0)
            rows = [r.__dict__ for r in self.recent(limit or None)]
            return _Reply(200, json.dumps(rows).encode())
        if parts.path == "/_fake/context" and method == "POST":
            self.context_tokens = int(parse_qs(parts.query).get("tokens", ["0"])[0] or 0)
            return _Reply(200, json.dumps({"context_tokens": self.context_tokens}).encode())
        if parts.path == "/_fake/reset" and method == "POST":
            self.reset()
            return _Reply(200, b'{"reset": true}')
        if parts.path == "/_fake/batch" and method == "POST":
            q = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if "seconds" in q:
                self.batch_seconds = float(q["seconds"])
            if "expire" in q:
                self.batch_expire = q["expire"] not in ("0", "false", "")
            if "lost_creates" in q:
                self.batch_lost_creates = int(q["lost_creates"])
            return _Reply(
                200, json.dumps({"seconds": self.batch_seconds, "expire": self.batch_expire}).encode()
            )
        return _Reply(404, b'{"error": {"message": "unknown control path"}}')


# ---- as a separate process ------------------------------------------------------------------


class FakeServerProcess:
    """`python -m judgepanel.fake.server …` as a child process (its own CPU, its own event
    loop), for benchmarks and tests that must not share a loop with the client.

        with FakeServerProcess("--latency", "1.0", "--rpm", "3000") as fake:
            fake.url, fake.stats()
    """

    def __init__(self, *args: str) -> None:
        self.args = [str(a) for a in args]
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> str:
        cmd = [sys.executable, "-m", "judgepanel.fake.server", "--port", "0", *self.args]
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.url = line
        return line

    def _get(self, path: str, method: str = "GET") -> Any:
        import urllib.request

        req = urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self._get("/_fake/stats")
        return result

    def requests(self, limit: int = 0) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._get(f"/_fake/requests?limit={limit}")
        return result

    def reset(self) -> None:
        self._get("/_fake/reset", method="POST")

    def answer(self, rules: Sequence[tuple[str, str]]) -> None:
        """Script replies: a request whose final user message contains `when` gets `text`."""
        import urllib.request

        data = json.dumps([{"when": w, "text": t} for w, t in rules]).encode()
        req = urllib.request.Request(self.url + "/_fake/answers", method="POST", data=data)
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()

    def set_context(self, tokens: int) -> None:
        """The server's context window per request (0: none), as `--context` sets it."""
        self._get(f"/_fake/context?tokens={int(tokens)}", method="POST")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None

    def __enter__(self) -> FakeServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Usage(argparse.HelpFormatter):
    def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)


class _Parser(argparse.ArgumentParser):
    """Bad options end in one line on stderr and exit 2, as every judgepanel command does."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def _parser(prog: str = "python -m judgepanel.fake.server") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        description="Fake OpenAI and Anthropic APIs on this machine (real HTTP, real wire formats), "
        "answered by simulated judges. The first stdout line is its URL (the OpenAI base_url is URL/v1, the Anthropic one URL);"
        " Ctrl-C stops it.",
        formatter_class=_Usage,
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument(
        "--port", type=int, default=0, help="0 picks a free port; the URL is the first stdout line"
    )
    p.add_argument("--latency", type=float, default=0.0, help="mean seconds before answering")
    p.add_argument("--jitter", type=float, default=0.0, help="latency is uniform in mean ± jitter")
    p.add_argument(
        "--rpm", type=float, default=None, help="server-side requests-per-minute limit (429 above it)"
    )
    p.add_argument("--burst", type=float, default=None, help="token bucket size for --rpm (default rpm/60)")
    p.add_argument(
        "--fail-rate",
        type=float,
        default=None,
        metavar="P",
        help="share of calls answered with a retryable 503 (shorthand for --fault 503=P)",
    )
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME=RATE",
        help=f"fault rate; NAME in {', '.join(FAULTS)}",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--retry-after", type=float, default=1.0, help="seconds announced by injected 429s")
    p.add_argument("--hang", type=float, default=600.0, help="longest a 'hang' fault holds the request")
    p.add_argument("--record-limit", type=int, default=20_000)
    p.add_argument(
        "--served-model", default=None, help="answer as this model whatever is asked (a local server)"
    )
    p.add_argument("--drip", type=float, default=2.0, help="seconds between body bytes for the 'drip' fault")
    p.add_argument("--huge", type=int, default=64 * 1024 * 1024, help="bytes of a 'huge' reply")
    p.add_argument("--no-prompt-cache", action="store_true", help="report no cached prompt tokens")
    p.add_argument(
        "--cache-min-tokens", type=int, default=None, help="shortest cached prefix (default: the providers')"
    )
    p.add_argument(
        "--refuse",
        action="append",
        default=[],
        metavar="PARAM",
        help="answer 400 to Chat Completions requests carrying this parameter (a server that lacks it)",
    )
    p.add_argument("--batch-seconds", type=float, default=1.0, help="a batch ends this long after creation")
    p.add_argument("--batch-expire", action="store_true", help="batches end expired, half unanswered")
    p.add_argument("--batch-lost-creates", type=int, default=0, help="lose the reply of the next N creates")
    p.add_argument(
        "--context", type=int, default=0, help="refuse prompts over N tokens as llama.cpp does (0: no limit)"
    )
    for knob in _SIM_KNOBS:
        p.add_argument(f"--{knob.replace('_', '-')}", type=float, default=None, help=f"sim brain {knob}")
    return p


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> None:
    """Serve until SIGINT or SIGTERM; the first stdout line is the URL."""
    parser = _parser(prog) if prog else _parser()
    args = parser.parse_args(argv)
    faults: dict[str, float] = {}
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0 (any free port) or a port number up to 65535, got {args.port}")
    if args.fail_rate is not None:
        if not 0.0 <= args.fail_rate <= 1.0:
            parser.error(f"--fail-rate must be in [0, 1], got {args.fail_rate:g}")
        faults["503"] = args.fail_rate
    for item in args.fault:
        name, _, rate = item.partition("=")
        try:
            faults[name] = float(rate or 1.0)
        except ValueError:
            parser.error(f"--fault {item}: the rate must be a number")
    sim = {k: getattr(args, k) for k in _SIM_KNOBS if getattr(args, k) is not None}
    try:
        server = FakeServer(
            host=args.host,
            port=args.port,
            latency=args.latency,
            jitter=args.jitter,
            rpm=args.rpm,
            burst=args.burst,
            faults=faults,
            seed=args.seed,
            retry_after=args.retry_after,
            hang=args.hang,
            sim=sim,
            record_limit=args.record_limit,
            served_model=args.served_model,
            drip=args.drip,
            huge=args.huge,
            refuse=args.refuse,
            prompt_cache=not args.no_prompt_cache,
            cache_min_tokens=args.cache_min_tokens,
            batch_seconds=args.batch_seconds,
            batch_expire=args.batch_expire,
            batch_lost_creates=args.batch_lost_creates,
            context_tokens=args.context,
        )
    except ValueError as exc:
        parser.error(str(exc))

    async def serve() -> None:
        try:
            url = await server.start()
        except OSError as exc:
            print(
                f"{parser.prog}: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            raise SystemExit(1) from None
        print(url, flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.aclose()

    asyncio.run(serve())


@contextlib.contextmanager
def running(**kwargs: Any) -> Iterator[FakeServer]:
    """`with running(latency=0.1) as fake:` — an in-process server in a thread."""
    server = FakeServer(**kwargs)
    server.start_in_thread()
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":
    main()
