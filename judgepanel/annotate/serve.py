"""`judgepanel annotate serve`: the annotators' pages and the owner's pages in one server.

Boundary: wiring. Requests for the annotators' routes (`/a/…`, `/api/annotate/QUEUE/next|meta|
mine|slot|label`) go to `annotate.annotator` over the restricted writing engine
(`store.annotation_engine`) and are authenticated by each annotator's own token; every other
request goes to the owner's read-only pages (`annotate.owner`) over the read-only engine, behind
the viewer's `Gate` (the owner's `--token`, required for any address but loopback, or the Host
check on loopback). Both halves get the viewer's security headers and Content-Security-Policy.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse

from judgepanel.annotate.annotator import annotator_routes
from judgepanel.annotate.owner import owner_routes
from judgepanel.errors import BadInput
from judgepanel.view.app import (
    BUSY_RETRY_AFTER_S,
    POOL_SIZE,
    POOL_TIMEOUT_S,
    SECURITY_HEADERS,
    Gate,
    _host_name,
    has_nul,
)
from judgepanel.view.listen import LOOPBACK_HOSTS, check_address, host_names, listen

_ANNOTATOR_PATH = re.compile(
    r"^/(a/[^/]+/?$|api/annotate/[^/]+/(next|meta|mine|label|slot/\d+)$|annotate-static/)"
)


def create_serve_app(
    write_engine: Any,
    read_engine: Any,
    *,
    token: str | None = None,
    allowed_hosts: frozenset[str] | None = LOOPBACK_HOSTS,
    db_label: str = "",
) -> Any:
    async def not_found(request: Any, exc: Exception) -> Any:
        return PlainTextResponse("not found", status_code=404)

    async def busy(request: Any, exc: Exception) -> Any:
        # every database connection is in use: say when to come back (as the viewer does)
        text = "judgepanel annotate is busy: every database connection is in use; try again shortly"
        headers = {"Retry-After": str(BUSY_RETRY_AFTER_S)}
        if request.url.path.startswith("/api/"):
            return JSONResponse({"ok": False, "error": text}, status_code=503, headers=headers)
        return PlainTextResponse(text, status_code=503, headers=headers)

    handlers = {404: not_found, PoolTimeout: busy}
    annotators = Starlette(routes=annotator_routes(write_engine), exception_handlers=handlers)
    owner = Gate(
        Starlette(routes=owner_routes(read_engine, db_label=db_label), exception_handlers=handlers),
        token=token,
        allowed_hosts=None if token else allowed_hosts,
    )
    hosts = None if token else allowed_hosts

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not _ANNOTATOR_PATH.match(scope.get("path", "")):
            await owner(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if hosts is not None and _host_name(headers.get("host", "")) not in hosts:
            await PlainTextResponse("judgepanel annotate answers only on its loopback address", 403)(
                scope, receive, send
            )
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        if has_nul(scope):  # as the owner's Gate: PostgreSQL refuses NUL in any text
            await PlainTextResponse("the address holds a NUL character (%00)", 400)(
                scope, receive, with_headers
            )
            return
        await annotators(scope, receive, with_headers)

    return app


def serve(db_url: str, *, host: str, port: int, token: str | None) -> None:
    """Bind, print the address, serve until interrupted (as `judgepanel view` does)."""
    import uvicorn

    from judgepanel.store.annotation_engine import annotation_engine
    from judgepanel.store.engine import display_url
    from judgepanel.store.readonly import read_only_engine

    check_address(host, port, token, give_token="--token for the owner's pages")
    write = annotation_engine(db_url, pool_size=POOL_SIZE, pool_timeout=POOL_TIMEOUT_S)
    read = read_only_engine(db_url, pool_size=POOL_SIZE, pool_timeout=POOL_TIMEOUT_S)
    try:
        sock, url = listen(host, port)
    except BadInput:
        write.dispose()
        read.dispose()
        raise
    print(url + ("  (owner token required)" if token else ""), flush=True)
    app = create_serve_app(
        write,
        read,
        token=token,
        allowed_hosts=host_names(host),
        db_label=display_url(db_url),
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    try:
        server.run(sockets=[sock])
    finally:
        write.dispose()
        read.dispose()
        sock.close()
    sys.stdout.flush()
