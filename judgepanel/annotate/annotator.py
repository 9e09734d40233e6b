"""The annotators' page and its JSON API: the one web surface that writes (issue 32 §2–3).

Routes (each needs the annotator's own token; nothing here is reachable with the owner's):

- ``GET /a/QUEUE``: the page (a shell; `annotate.js` drives it through the API). Opened as
  ``/a/QUEUE?token=T`` from the invitation link, it sets the token as a cookie (HttpOnly,
  SameSite=Lax, one cookie per queue) and redirects to the address without it.
- ``GET /api/annotate/QUEUE/next`` → ``{slot, item, order, csrf, progress, …}``: the annotator's
  current seat (a reload or another day resumes there) or the next one, reserved for them;
  ``slot`` null when nothing is left.
- ``GET /api/annotate/QUEUE/meta``: instructions, scale, checklist; ``…/mine``: the annotator's
  labelled seats (to go back); ``…/slot/ID``: one of their seats again.
- ``POST /api/annotate/QUEUE/label`` with JSON ``{slot, value, csrf[, comment | skip_reason]}`` →
  ``{ok: true, progress: {done, total}}``.

Authentication: ``Authorization: Bearer T`` or the link's cookie; the token is hashed and its hash
looked up (a lookup's timing says nothing of a token); a revoked token is refused at its next request
(403). Writes: POST only, JSON only, at most 64 KiB, with a CSRF token bound to the annotator's
session (HMAC of the queue under their token: a page on another site can neither read it nor
compute it), and an ``Origin``, when sent, naming this server. A write only ever inserts or updates
the annotator's own labels in this queue (`store.annotation.submit`), through the restricted engine
of `store.annotation_engine`. Errors are one message and a 4xx: 400 bad input (a value off the
scale), 401 no or unknown token, 403 revoked or bad CSRF, 404 an unknown item, 409 a closed queue, a
double submit or a lapsed reservation someone else took; nothing is written twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.parse
from http.cookies import SimpleCookie
from typing import Any

from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from judgepanel.annotate import web
from judgepanel.errors import BadInput, NotFound
from judgepanel.store import annotation as store

MAX_BODY = 64 * 1024
_CSRF = b"judgepanel-annotate-csrf\x00"


def cookie_name(queue: str) -> str:
    """One cookie per queue (a person may label in several), named without the queue's text."""
    return "jpa_" + hashlib.sha256(queue.encode()).hexdigest()[:16]


def csrf_for(token: str, queue: str) -> str:
    return hmac.new(token.encode(), _CSRF + queue.encode(), hashlib.sha256).hexdigest()


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _token(request: Request, queue: str) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    cookie = SimpleCookie()
    try:
        cookie.load(request.headers.get("cookie", ""))
    except Exception:  # a malformed cookie header is no token
        return None
    name = cookie_name(queue)
    return cookie[name].value if name in cookie else None


def _member(engine: Engine, request: Request, queue: str) -> tuple[store.Member, str]:
    token = _token(request, queue)
    if not token or len(token) > 200:
        raise Refused(401, "this page needs your annotator link (or Authorization: Bearer TOKEN)")
    hashed = store.token_hash(token)
    try:
        member = store.member_by_token(engine, queue, hashed)
    except NotFound:
        raise Refused(401, "unknown annotator link for this queue") from None
    except store.Gone:
        raise Refused(403, "this annotator link was revoked") from None
    return member, token


def _error(exc: Exception) -> tuple[int, str]:
    if isinstance(exc, Refused):
        return exc.status, str(exc)
    if isinstance(exc, store.Conflict):
        return 409, str(exc)
    if isinstance(exc, NotFound):
        return 404, str(exc)
    if isinstance(exc, BadInput):
        return 400, str(exc)
    raise exc


def _slot_payload(
    view: store.SlotView, m: store.Member, csrf: str, progress: dict[str, int]
) -> dict[str, Any]:
    return {
        "slot": view.slot,
        "state": view.state,
        "item": view.unit,
        "order": view.order,
        "mine": view.mine,
        "reserved_until": None
        if view.reserved_until is None
        else view.reserved_until.isoformat(timespec="seconds") + "Z",
        "csrf": csrf,
        "progress": progress,
        "done": False,
    }


def annotator_routes(engine: Engine) -> list[BaseRoute]:
    """The annotators' routes over `engine`, the restricted writing engine."""

    def q_of(request: Request) -> str:
        return str(request.path_params["queue"])

    async def page(request: Request) -> Response:
        queue = q_of(request)
        token = request.query_params.get("token")
        if token is not None:
            # only a working token becomes the cookie: a crafted link cannot sign a visitor in as
            # someone else's annotator (their labels would land under that name)
            try:
                await run_in_threadpool(store.member_by_token, engine, queue, store.token_hash(token[:200]))
            except (NotFound, store.Gone) as exc:
                code = 403 if isinstance(exc, store.Gone) else 401
                text = (
                    "this annotator link was revoked"
                    if code == 403
                    else "unknown annotator link for this queue"
                )
                return web.page("error.html.j2", code, message=text, status=code, db_label="")
            response = RedirectResponse("/a/" + urllib.parse.quote(queue, safe=""), status_code=303)
            response.set_cookie(
                cookie_name(queue), token, httponly=True, samesite="lax", path="/", max_age=90 * 24 * 3600
            )
            return response
        try:
            member, _ = await run_in_threadpool(_member, engine, request, queue)
        except Exception as exc:
            code, message = _error(exc)
            return web.page("error.html.j2", code, message=message, status=code, db_label="")
        return web.page("annotate.html.j2", queue=queue, annotator=member.name)

    async def api(request: Request, handler: Any) -> Response:
        queue = q_of(request)
        try:
            member, token = await run_in_threadpool(_member, engine, request, queue)
            return web.JSON(await run_in_threadpool(handler, member, token, request, queue))
        except Exception as exc:
            code, message = _error(exc)
            return web.JSON({"ok": False, "error": message}, status_code=code)

    def next_(member: store.Member, token: str, request: Request, queue: str) -> dict[str, Any]:
        slot = store.next_slot(engine, member)
        csrf = csrf_for(token, queue)
        with engine.connect() as conn:
            progress = store.progress(conn, member)
        if slot is None:
            return {
                "slot": None,
                "done": True,
                "csrf": csrf,
                "progress": progress,
                "item": None,
                "order": None,
            }
        return _slot_payload(store.slot_view(engine, member, slot), member, csrf, progress)

    def one(member: store.Member, token: str, request: Request, queue: str) -> dict[str, Any]:
        view = store.slot_view(engine, member, int(request.path_params["slot"]))
        with engine.connect() as conn:
            progress = store.progress(conn, member)
        return _slot_payload(view, member, csrf_for(token, queue), progress)

    def mine(member: store.Member, token: str, request: Request, queue: str) -> dict[str, Any]:
        return {"slots": store.my_slots(engine, member)}

    def meta(member: store.Member, token: str, request: Request, queue: str) -> dict[str, Any]:
        from judgepanel.store.annotation_read import rubric_clauses

        q = member.queue
        clauses = rubric_clauses(engine, q.rubric_version_id, q.dimension) if q.rubric_version_id else []
        return {
            "queue": q.name,
            "annotator": member.name,
            "kind": q.kind,
            "dimension": q.dimension or None,
            "scale": ["A", "B", "T"] if q.kind == "pairwise" else list(q.scale),
            "instructions": q.instructions,
            "clauses": clauses,
            "status": q.status,
        }

    async def label(request: Request) -> Response:
        queue = q_of(request)
        try:
            member, token = await run_in_threadpool(_member, engine, request, queue)
            body = await _json_body(request)
            _check_origin(request)
            sent = body.get("csrf")
            # compare_digest takes ASCII str only (it raises on anything else): ours is hex
            if not (isinstance(sent, str) and sent.isascii()) or not hmac.compare_digest(
                sent, csrf_for(token, queue)
            ):
                raise Refused(403, "missing or wrong CSRF token: reload the page")
            slot = body.get("slot")
            if isinstance(slot, bool) or not isinstance(slot, int):
                raise BadInput("slot must be the integer the item came with")
            comment, skip = body.get("comment"), body.get("skip_reason")
            if any(v is not None and not isinstance(v, str) for v in (comment, skip)):
                raise BadInput("comment and skip_reason must be text")
            if skip is None and "value" not in body:
                raise BadInput("give a value (or a skip_reason)")
            done = await run_in_threadpool(
                store.submit,
                engine,
                member,
                slot,
                value=body.get("value"),
                comment=comment or None,
                skip_reason=skip,
            )
            if done.completed_unit and member.queue.stop_when_decided:
                from judgepanel.annotate.certify import refresh_decided

                await run_in_threadpool(refresh_decided, engine, queue)
            return web.JSON({"ok": True, "kind": done.kind, "progress": done.progress})
        except Exception as exc:
            code, message = _error(exc)
            return web.JSON({"ok": False, "error": message}, status_code=code)

    def route(path: str, handler: Any) -> Route:
        async def endpoint(request: Request) -> Response:
            return await api(request, handler)

        return Route(path, endpoint, methods=["GET", "HEAD"])

    return [
        Route("/a/{queue}", page, methods=["GET", "HEAD"]),
        route("/api/annotate/{queue}/next", next_),
        route("/api/annotate/{queue}/meta", meta),
        route("/api/annotate/{queue}/mine", mine),
        route("/api/annotate/{queue}/slot/{slot:int}", one),
        Route("/api/annotate/{queue}/label", label, methods=["POST"]),
        web.static_mount(),
    ]


async def _json_body(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise BadInput("send the label as JSON (Content-Type: application/json)")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise BadInput(f"the request body is larger than {MAX_BODY} bytes")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: absurd nesting
        raise BadInput("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise BadInput("the request body must be a JSON object")
    return body


def _check_origin(request: Request) -> None:
    origin = request.headers.get("origin")
    if origin is None:  # scripts and older browsers send none; the CSRF token still holds
        return
    host = request.headers.get("host", "")
    if urllib.parse.urlsplit(origin).netloc != host:
        raise Refused(403, "this page only accepts labels from its own pages (Origin differs)")
