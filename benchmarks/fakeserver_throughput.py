"""How fast the fake provider server answers, and what the provider layer costs on top of the SDK.

Starts `python -m judgepanel.fake.server` as its own process (zero latency by default) and
drives it three ways from this process, each with `--concurrency` calls in flight:

* raw:      hand-written HTTP/1.1 over asyncio sockets (the server's own ceiling on this machine);
* bare:     `AsyncOpenAI(max_retries=0)` + a semaphore, `chat.completions.create` (the reference loop
            the runner's benchmark compares against);
* provider: `make_provider(parse_spec("openai:…?base_url=…"))` + a semaphore, `complete(...)`.

For each: calls/s, client CPU ms per call, server CPU ms per call (from /proc).

    .venv/bin/python benchmarks/fakeserver_throughput.py --calls 2000 --concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable

import openai

from judgepanel.fake.server import FakeServerProcess
from judgepanel.providers import ChatRequest, make_provider, parse_spec

PROMPT = (
    "<source>The city council approved a new budget on Monday that raises spending on public transport "
    "by ten percent.</source>\n<candidate>The council approved a budget raising transport spending.</candidate>"
)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(n: int, concurrency: int, call: Callable[[int], Awaitable[object]]) -> float:
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            await call(i)

    await one(-1)  # warm-up: connection, imports
    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - started


async def raw_client(url: str, n: int, concurrency: int) -> float:
    host, port = url.removeprefix("http://").split(":")
    per_conn = max(1, n // concurrency)

    async def conn(k: int) -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        for i in range(per_conn):
            body = json.dumps(
                {"model": "bench", "messages": [{"role": "user", "content": f"{PROMPT} {k}-{i}"}]}
            ).encode()
            writer.write(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
        writer.close()
        await writer.wait_closed()

    started = time.perf_counter()
    await asyncio.gather(*(conn(k) for k in range(concurrency)))
    return time.perf_counter() - started


async def bare(url: str, n: int, concurrency: int) -> float:
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-bench", max_retries=0)

    async def call(i: int) -> object:
        return await client.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": f"{PROMPT} {i}"}]
        )

    try:
        return await drive(n, concurrency, call)
    finally:
        await client.close()


async def provider(url: str, n: int, concurrency: int) -> float:
    judge = make_provider(parse_spec(f"openai:bench?base_url={url}/v1"), max_connections=concurrency)

    async def call(i: int) -> object:
        request = ChatRequest(
            messages=[{"role": "user", "content": f"{PROMPT} {i}"}], schema_name="pointwise_verdict"
        )
        return await judge.complete(request, timeout=30)

    try:
        return await drive(n, concurrency, call)
    finally:
        await judge.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
    rows = []
    with FakeServerProcess("--latency", str(args.latency)) as fake:
        assert fake._proc is not None
        pid = fake._proc.pid
        for name, run in (
            ("raw sockets", raw_client),
            ("bare AsyncOpenAI", bare),
            ("OpenAIProvider", provider),
        ):
            server0, client0 = cpu_seconds(pid), time.process_time()
            elapsed = asyncio.run(run(fake.url, args.calls, args.concurrency))
            client_ms = (time.process_time() - client0) / args.calls * 1000
            server_ms = (cpu_seconds(pid) - server0) / args.calls * 1000
            rows.append((name, args.calls / elapsed, client_ms, server_ms))
    print(f"{'client':<18} {'calls/s':>9} {'client CPU ms/call':>19} {'server CPU ms/call':>19}")
    for name, rate, client_ms, server_ms in rows:
        print(f"{name:<18} {rate:>9.0f} {client_ms:>19.2f} {server_ms:>19.2f}")


if __name__ == "__main__":
    main()
