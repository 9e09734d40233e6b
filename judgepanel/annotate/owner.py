"""The owner's live pages of the annotation queues: `/annotate` (every queue) and `/annotate/QUEUE`
(progress per annotator, time per label, labels per unit, agreement, the certification state),
each with its JSON twin under `/api/` holding the keys of `annotate list --json` / `annotate
status --json`.

Boundary: read-only routes over a read-only engine (`store.readonly.read_only_engine`); the
viewer adds them with one call (`owner_routes`) and `annotate serve` serves them behind the
owner's token. Nothing here writes. The page reloads itself every `REFRESH` seconds (a meta
refresh: no script needed), so it follows the labels as they arrive.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from judgepanel.annotate import web
from judgepanel.errors import BadInput, NotFound

REFRESH = 10


def owner_routes(engine: Engine, *, db_label: str = "", n_boot: int = 200) -> list[BaseRoute]:
    """GET/HEAD routes of the owner's pages and their JSON twins, plus the pages' static files."""
    from judgepanel.annotate.certify import status
    from judgepanel.store.annotation import list_queues

    async def _payload(request: Request) -> tuple[dict[str, Any] | None, Exception | None]:
        name = request.path_params.get("queue")
        try:
            if name is None:
                return {"queues": await run_in_threadpool(list_queues, engine)}, None
            return await run_in_threadpool(lambda: status(engine, str(name), n_boot=n_boot)), None
        except (NotFound, BadInput) as exc:
            return None, exc

    async def html(request: Request) -> Response:
        payload, exc = await _payload(request)
        if exc is not None:
            code = 404 if isinstance(exc, NotFound) else 400
            return web.page("error.html.j2", code, message=str(exc), status=code, db_label=db_label)
        template = "queues.html.j2" if "queue" not in request.path_params else "owner.html.j2"
        api = "/api" + request.url.path
        return web.page(template, d=payload, db_label=db_label, api=api, refresh=REFRESH)

    async def api(request: Request) -> Response:
        payload, exc = await _payload(request)
        if exc is not None:
            return web.JSON({"error": str(exc)}, status_code=404 if isinstance(exc, NotFound) else 400)
        return web.JSON(payload)

    return [
        Route("/annotate", html, methods=["GET", "HEAD"]),
        Route("/annotate/{queue}", html, methods=["GET", "HEAD"]),
        Route("/api/annotate", api, methods=["GET", "HEAD"]),
        Route("/api/annotate/{queue}", api, methods=["GET", "HEAD"]),
        web.static_mount(),
    ]
