"""The fake server's HTTP/1.1 transport: the reply it builds (`_Reply`), how a reply becomes
bytes (`_encode`) and the ways of writing them that some faults need (one byte at a time, padded
to a huge size, gzip-bombed, endless, a TCP reset).

Boundary: `fake.server` reads requests and routes them, `fake.formats` and `fake.injection`
build the replies; this module only frames and writes them. It knows no wire format and holds
no state.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import zlib
from dataclasses import dataclass, field

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Overloaded",
}


@dataclass
class _Reply:
    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "application/json"
    drip: float = 0.0  # seconds between body bytes (0: all at once)
    pad: int = 0  # `huge`: the body is padded to this many bytes
    endless: bool = False  # `endless`: a chunked body that never ends
    gzip: bool = False  # `gzipbomb`: the padded body gzip-compressed, chunked


class _NoReply(Exception):
    """Raised to leave a request unanswered (hang, reset)."""


async def _drip(writer: asyncio.StreamWriter, data: bytes, reply: _Reply) -> None:
    """Send the head at once, then the body one byte every `reply.drip` seconds: every read the
    client makes is answered quickly, so only a deadline on the whole call stops it."""
    split = len(data) - len(reply.body)
    writer.write(data[:split])
    await writer.drain()
    for i in range(split, len(data)):
        await asyncio.sleep(reply.drip)
        writer.write(data[i : i + 1])
        await writer.drain()


_BLOCK = 1 << 16


async def _huge(writer: asyncio.StreamWriter, reply: _Reply, keep_alive: bool) -> bool:
    """The real answer as a JSON object with a `padding` member in front, `reply.pad` bytes in all,
    written 64 KB at a time (the server never holds it whole); False when the client hung up."""
    head_field = b'{"padding":"'
    rest = b'",' + reply.body[1:]
    n = max(0, reply.pad - len(head_field) - len(rest))
    total = len(head_field) + n + len(rest)
    head = _encode(_Reply(reply.status, b"", reply.headers, reply.content_type), keep_alive, "")
    head = head.replace(b"content-length: 0\r\n", f"content-length: {total}\r\n".encode())
    block = b"x" * _BLOCK
    try:
        writer.write(head + head_field)
        while n > 0:
            writer.write(block[: min(n, _BLOCK)])
            n -= min(n, _BLOCK)
            await writer.drain()
        writer.write(rest)
        await writer.drain()
    except (ConnectionError, OSError):
        return False
    return keep_alive


async def _gzip_bomb(writer: asyncio.StreamWriter, reply: _Reply) -> bool:
    """`_huge`'s body gzip-compressed as it is produced, sent chunked with content-encoding gzip:
    small on the wire, `reply.pad` bytes once decoded."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
        b"transfer-encoding: chunked\r\nconnection: close\r\nserver: judgepanel-fakeserver\r\n\r\n"
    )

    def chunk(data: bytes) -> bytes:
        return f"{len(data):x}\r\n".encode() + data + b"\r\n" if data else b""

    rest = b'",' + reply.body[1:]
    n = max(0, reply.pad - len(rest) - 12)
    block = b"x" * _BLOCK
    try:
        writer.write(head + chunk(packer.compress(b'{"padding":"')))
        while n > 0:
            if writer.is_closing():
                return False
            writer.write(chunk(packer.compress(block[: min(n, _BLOCK)])))
            n -= min(n, _BLOCK)
            await writer.drain()
            await asyncio.sleep(0)  # the compressed pieces are small: drain alone would not yield
        writer.write(chunk(packer.compress(rest) + packer.flush()) + b"0\r\n\r\n")
        await writer.drain()
    except (ConnectionError, OSError):
        return False
    return False  # connection: close


async def _endless(writer: asyncio.StreamWriter) -> bool:
    """A 200 whose chunked body never ends; stops only when the client hangs up."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n"
        b"connection: close\r\nserver: judgepanel-fakeserver\r\n\r\n"
    )
    chunk = f"{_BLOCK:x}\r\n".encode() + b" " * _BLOCK + b"\r\n"
    try:
        writer.write(head + b'5\r\n{"a":\r\n')
        while True:
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        return False


def _encode(reply: _Reply, keep_alive: bool, ident: str) -> bytes:
    head = [
        f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Error')}",
        f"content-type: {reply.content_type}",
        f"content-length: {len(reply.body)}",
        f"connection: {'keep-alive' if keep_alive else 'close'}",
        "server: judgepanel-fakeserver",
    ]
    head += [f"{k}: {v}" for k, v in reply.headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + reply.body


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a crashed proxy would."""
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
