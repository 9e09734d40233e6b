"""Is the owner of a lease still alive? Decided without guessing from a PID alone.

A lease owner is `host:pid:nonce:pidns:boot` (`owner_id`): the host name, the process id as the
process itself sees it, a random nonce, the inode of its PID namespace and the start of the
machine's boot id.

- PostgreSQL: every live owner holds a session-level advisory lock keyed by its owner string on a
  connection of its own (`Presence`), for as long as it may hold leases. An owner is dead exactly
  when its lock can be taken (`pg_try_advisory_xact_lock`, inside the transaction that gives its
  jobs back, so the lock is released with it): the server drops a session's locks when the process
  dies, whichever machine, container or PID namespace it ran in. Nothing is read from the PID.
- SQLite serves one machine: an owner is dead when it names this host, this boot and this PID
  namespace, and no process of that id exists (`os.kill(pid, 0)`). A worker in another PID
  namespace (a container with host networking, `unshare --pid`) or from before a reboot can only
  see its leases expire, never taken over early.

Owners written in another form (`host:pid:nonce`, by older versions, or hand-made) are never
judged dead here: their leases are taken over when they expire.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Engine, text

_BOOT_CHARS = 12
# PostgreSQL: an owner's lock must be free twice this far apart before its leases are taken; a live
# owner checks its lock every second (`Runner._heartbeat`) and takes it again after a restart
GRACE_S = 3.0


def _pid_namespace() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "-"  # no /proc (macOS): one PID namespace per machine
    return "".join(ch for ch in link if ch.isdigit()) or "-"


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip().replace("-", "")[:_BOOT_CHARS] or "-"
    except OSError:
        return "-"


def owner_id() -> str:
    """`host:pid:nonce:pidns:boot`, at most 40 + 1 + 10 + 1 + 8 + 1 + 20 + 1 + 12 characters."""
    host = socket.gethostname().replace(":", "_")[:40]
    return f"{host}:{os.getpid()}:{os.urandom(4).hex()}:{_pid_namespace()}:{_boot_id()}"


def _parts(owner: str) -> list[str] | None:
    parts = owner.split(":")
    return parts if len(parts) == 5 and parts[1].isdigit() else None


def lock_key(owner: str) -> int:
    """The advisory-lock key of an owner: a signed 64-bit hash of the owner string."""
    return int.from_bytes(
        hashlib.sha256(f"judgepanel-owner:{owner}".encode()).digest()[:8], "big", signed=True
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dead_here(owner: str) -> bool:
    """SQLite's rule: the owner ran in this host, boot and PID namespace, and its process is gone."""
    parts = _parts(owner)
    if parts is None:
        return False
    host, pid, _nonce, ns, boot = parts
    me = owner_id().split(":")
    if (host, ns, boot) != (me[0], me[3], me[4]):
        return False
    return not _pid_alive(int(pid))


def dead_owners(conn: Connection, owners: Iterable[str]) -> list[str]:
    """The owners that are certainly dead, judged inside `conn`'s transaction. On PostgreSQL each
    dead owner's advisory lock is now held by this transaction until it ends, so the owner cannot
    be judged alive again until its jobs have been given back."""
    found = [o for o in owners if _parts(o) is not None]
    if conn.dialect.name != "postgresql":
        return [o for o in found if dead_here(o)]
    return [
        o
        for o in found
        if conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": lock_key(o)}).scalar()
    ]


class Presence:
    """The advisory locks that say a run's owners are alive (PostgreSQL; a no-op on SQLite).

    One connection of its own, outside the pool (a pooled connection would carry the
    locks to its next user). `check()` re-connects and takes the locks again after the connection
    was lost (a database restart drops every session's locks)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.enabled = engine.dialect.name == "postgresql"
        self._owners: set[str] = set()
        self._conn: Any = None
        self._fairy: Any = None
        self._lock = threading.Lock()

    def hold(self, owner: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._owners.add(owner)
            self._ensure()
            self._take(owner)

    def drop(self, owner: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._owners.discard(owner)
            if self._conn is not None:
                try:
                    self._exec("SELECT pg_advisory_unlock(%s)", lock_key(owner))
                except Exception:
                    self._close()
            if not self._owners:
                self._close()

    def check(self) -> bool:
        """True when the locks are held (after re-connecting and re-taking them if needed); raises
        the database's error while it cannot be reached."""
        if not self.enabled:
            return True
        with self._lock:
            if not self._owners:
                return True
            if self._conn is not None:
                try:
                    self._exec("SELECT 1")
                    return True
                except Exception:
                    self._close()
            self._ensure()
            for owner in sorted(self._owners):
                self._take(owner)
            return True

    def _ensure(self) -> None:
        if self._conn is not None:
            return
        error: Exception | None = None
        for _ in range(12):  # the pool may hold connections a database restart broke: skip those
            fairy = self.engine.raw_connection()
            try:
                cur = fairy.cursor()
                cur.execute("SELECT 1")
                cur.fetchall()
                cur.close()
                fairy.rollback()
            except Exception as exc:
                error = exc
                fairy.invalidate(exc)
                continue
            fairy.detach()  # never back into the pool: its locks belong to this process's owners
            conn = fairy.dbapi_connection
            assert conn is not None
            conn.autocommit = True
            self._conn, self._fairy = conn, fairy  # the fairy too: collecting it closes the connection
            return
        assert error is not None
        raise error

    def _take(self, owner: str) -> None:
        # blocking: a peer that is giving this owner's jobs back holds the lock for that transaction
        self._exec("SELECT pg_advisory_lock(%s)", lock_key(owner))

    def _exec(self, sql: str, *args: Any) -> None:
        cur = self._conn.cursor()
        try:
            cur.execute(sql, args or None)
            cur.fetchall()
        finally:
            cur.close()

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = self._fairy = None
