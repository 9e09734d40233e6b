"""Engines and sessions: the one place that knows SQLite from PostgreSQL.

SQLite gets WAL (readers never block the single writer), a busy timeout (a second process waits
instead of failing), and foreign keys (off by default in SQLite). PostgreSQL URLs are routed to
psycopg 3 whatever driver they name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from weakref import WeakKeyDictionary

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.engine.url import URL
from sqlalchemy.exc import OperationalError

from judgepanel.errors import BadInput, JudgepanelError

if TYPE_CHECKING:  # the ORM is loaded by the commands that write, not by the readers (store.tables)
    from sqlalchemy.orm import Session

BUSY_TIMEOUT_MS = 30_000
# The URL as the user typed it (password masked), per engine: messages name that, not the driver
# URL (`postgresql+psycopg://…`, `sqlite:///file:…?mode=ro&uri=true`) the engine was built from.
_TYPED: WeakKeyDictionary[Engine, str] = WeakKeyDictionary()

T = TypeVar("T")

IN_CHUNK = 500  # values bound in one IN list: within every backend's parameter limit


def in_chunks(values: Collection[str]) -> Iterator[list[str]]:
    """`values`, unique and sorted, in lists short enough for one statement's `IN (…)`."""
    items = sorted(set(values))
    for i in range(0, len(items), IN_CHUNK):
        yield items[i : i + IN_CHUNK]


class PerEngine(Generic[T]):
    """One `T` per engine, made on first use and gone with the engine: what a process keeps
    between requests about one database (a cache keyed by what it read), never shared by two."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._of: WeakKeyDictionary[Engine, T] = WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, engine: Engine) -> T:
        with self._lock:
            got = self._of.get(engine)
            if got is None:
                got = self._of[engine] = self._make()
            return got


def display_url(url: str) -> str:
    """`url` for a message: as typed, with any password masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL at all: show nothing of it that could be a secret
        return "(the --db value)"


def typed_url(engine: Engine) -> str:
    """The URL the user gave for `engine` (password masked)."""
    return _TYPED.get(engine) or engine.url.render_as_string(hide_password=True)


def ensure_reachable(engine: Engine) -> None:
    """Connect once, so a missing PostgreSQL database or an unreachable server is one line naming
    the URL the user typed (a missing database is the user's input: exit 2)."""
    try:
        with engine.connect():
            pass
    except OperationalError as exc:
        line = (str(exc.orig or exc).strip().splitlines() or [type(exc).__name__])[0]
        where = typed_url(engine)
        if "does not exist" in line:
            raise BadInput(
                f"no database at {where} ({line.rsplit('FATAL:', 1)[-1].strip()}): create it, "
                "then run `judgepanel db upgrade`"
            ) from None
        raise JudgepanelError(f"database: {line} (--db {where})") from None


def refused_here(engine: Engine) -> Engine:
    """`engine` once a first transaction has run on it, so that the listeners restricting each of
    its connections or transactions (a read-only or an annotators' engine) refuse here rather than
    on the first page served; disposed when they do."""
    try:
        ensure_reachable(engine)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").all()
    except BaseException:
        engine.dispose()
        raise
    return engine


def normalise_url(url: str) -> URL:
    try:
        parsed = make_url(url)
    except Exception as exc:  # SQLAlchemy's ArgumentError names the URL; keep one line
        raise BadInput(f"not a database URL: {url!r}") from exc
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed
    raise BadInput(f"unsupported database {backend!r}: use sqlite:///FILE or postgresql://…")


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def sqlite_file(engine: Engine) -> Path | None:
    """The database file of a SQLite engine (None for PostgreSQL or an in-memory database)."""
    if not is_sqlite(engine):
        return None
    database = engine.url.database or ""
    if database.startswith("file:"):  # a URI filename (the read-only engines)
        database = database[len("file:") :].split("?", 1)[0]
    return Path(database) if database and database != ":memory:" else None


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")  # safe under WAL: a crash loses no committed transaction
    cur.close()


def bounded_pool(pool_size: int | None, pool_timeout: float | None) -> dict[str, Any]:
    """`make_engine`'s `pool=` for a server that must not queue without bound (the viewer, the
    annotation pages): at most `pool_size` connections (no overflow), each waited for at most
    `pool_timeout` seconds (then `sqlalchemy.exc.TimeoutError`); None leaves SQLAlchemy's default."""
    pool: dict[str, Any] = {}
    if pool_size is not None:
        pool.update(pool_size=pool_size, max_overflow=0)
    if pool_timeout is not None:
        pool["pool_timeout"] = pool_timeout
    return pool


def make_engine(
    url: str, *, read_only: bool = False, create: bool = True, pool: dict[str, Any] | None = None
) -> Engine:
    """An engine for `url`. `read_only` opens SQLite with mode=ro; PostgreSQL sessions set
    READ ONLY per transaction (see `read_only_connection`). Without `create` a missing SQLite
    file is a `BadInput` instead of a new empty database (and new folders) at a mistyped path.
    `pool`: the connection pool's `pool_size`, `max_overflow`, `pool_timeout` (a file or server
    database; SQLAlchemy's defaults otherwise)."""
    engine = _make_engine(url, read_only=read_only, create=create, pool=pool or {})
    _TYPED[engine] = display_url(url)
    return engine


def _make_engine(url: str, *, read_only: bool, create: bool, pool: dict[str, Any]) -> Engine:
    parsed = normalise_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:":
            path = Path(database)
            if path.is_dir():
                raise BadInput(f"{path} is a folder, not a database file")
            if (read_only or not create) and not path.exists():
                raise BadInput(
                    f"no database at {path}: run `judgepanel db upgrade` first "
                    "(or point --db / JUDGEPANEL_DB at your database)"
                )
            if read_only:
                engine = create_engine(
                    f"sqlite:///file:{path.resolve()}?mode=ro&uri=true",
                    connect_args={"timeout": BUSY_TIMEOUT_MS / 1000},
                    **pool,
                )
            else:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise BadInput(f"cannot create a database at {path}: {exc.strerror}") from exc
                engine = create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000}, **pool)
        else:
            engine = create_engine(parsed)
        event.listen(engine, "connect", _sqlite_pragmas)
        if not read_only and database and database != ":memory:":
            with engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA journal_mode=WAL")
        return engine
    return create_engine(parsed, pool_pre_ping=True, **pool)


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any exception (imports are all-or-nothing)."""
    from sqlalchemy.orm import sessionmaker

    factory = sessionmaker(engine, expire_on_commit=False)
    with factory() as session, session.begin():
        yield session
