"""Where `judgepanel view` and `judgepanel annotate serve` listen: the loopback check, the socket
bound before the server starts, and the Host names a token-less server answers.

Boundary: sockets and address strings only (no web framework, no database).
"""

from __future__ import annotations

import ipaddress
import socket

from judgepanel.errors import BadInput

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback(host: str) -> bool:
    """`localhost` or any loopback address (127.0.0.0/8, ::1), bracketed or not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_address(host: str, port: int, token: str | None, *, give_token: str) -> None:
    """One `BadInput` line for a port out of range, a token too short to guard anything, or an
    address other machines can reach without a token (`give_token`: how to give one)."""
    if not 0 <= port <= 65535:
        raise BadInput(f"--port must be between 0 and 65535, got {port}")
    if token is not None and len(token) < 16:
        raise BadInput(
            "--token must be at least 16 characters (e.g. `python -c 'import secrets; print(secrets.token_urlsafe())'`)"
        )
    if not is_loopback(host) and not token:
        raise BadInput(f"--host {host} is reachable from other machines: give {give_token}")


def host_names(host: str) -> frozenset[str] | None:
    """The Host names a server bound to `host` without a token answers: the usual loopback names
    and the address it was bound to (`--host 127.0.0.2` is reached as `Host: 127.0.0.2:PORT`, which
    a browser sends); None (no Host check: the token guards) for any other address."""
    if not is_loopback(host):
        return None
    return LOOPBACK_HOSTS | {host.strip("[]").lower()}


def listen(host: str, port: int) -> tuple[socket.socket, str]:
    """A listening socket on `host`:`port` (0: any free port) and the URL it answers on; one
    `BadInput` line when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)  # connections wait in the backlog from now on, before the server starts
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}/"
