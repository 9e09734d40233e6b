"""The viewer's ASGI app (Starlette): read-only pages over the results database and their JSON twins.

Every page `/X` has `/api/X` returning the dict the page renders (see `judgepanel.view.data`).
Safety, in the order a request meets it (`Gate`):

- **token**: with `token` set (required by the CLI for any address but loopback), every request,
  static files and the API included, must present it — `Authorization: Bearer T`, the cookie the
  viewer sets, or `?token=T` once (answered by a redirect that sets the cookie and drops the token
  from the address); each presented value is compared in constant time (`hmac.compare_digest`);
- **host**: without a token the viewer answers only `Host: 127.0.0.1 / localhost / [::1]` or the loopback address it was bound to, so a
  web page elsewhere cannot reach it through DNS rebinding;
- **read only**: only GET and HEAD routes exist (anything else is 405), and the engine is the
  read-only one of `store.readonly.read_only_engine` (SQLite `mode=ro`; PostgreSQL READ ONLY
  transactions under the `query` reader role);
- **escaping**: Jinja autoescape on every template; the only markup not escaped is the SVG that
  `report.plots` draws (matplotlib escapes its text) and the repair and alignment sections that
  `report.iteration` and `report.alignment` build with `html.escape`; a Content-Security-Policy allows scripts from the
  viewer itself only (no inline script, no eval), so an escaping slip still runs nothing.
"""

from __future__ import annotations

import hmac
import json
import math
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from importlib import metadata
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

# one JSON response for both web surfaces (non-finite floats as null): the annotation pages' own
from judgepanel.annotate.web import JSON
from judgepanel.errors import BadInput, NotFound
from judgepanel.view import data, table
from judgepanel.view.listen import LOOPBACK_HOSTS
from judgepanel.view.stats import StatsCache

HERE = Path(__file__).resolve().parent
COOKIE = "judgepanel_view_token"
BUSY_RETRY_AFTER_S = 2  # a 503's Retry-After when no database connection is free
# the viewer's connection pool: at most this many connections (no overflow), each waited for at
# most this long before the request is answered 503 (not the 30 s SQLAlchemy waits by default)
POOL_SIZE = 10
POOL_TIMEOUT_S = 5.0
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _host_name(host: str) -> str:
    """The name in a Host header without its port; the header as it is when anything but a port
    follows the name (`127.0.0.1:80@evil.example` names no loopback host)."""
    if host.startswith("["):  # [::1]:8765
        name, _, rest = host[1:].partition("]")
    elif host.count(":") == 1:
        name, rest = host.split(":")
        rest = ":" + rest
    else:
        return host
    return name if rest == "" or (rest[:1] == ":" and rest[1:].isdigit() and rest[1:].isascii()) else host


# what may stay unencoded in a path segment (RFC 3986 pchar); `\\`, `?`, `#`, spaces and anything
# not ASCII are percent-encoded
_PATH_SAFE = "/!$&'()*+,;=:@-._~"


def _local_path(path: str) -> str:
    """`path` as the Location of a redirect that stays on this server: one leading slash (`//host`
    is another site to a browser) and percent-encoded (a header holds Latin-1 only, and a
    browser reads `/\\host` as `//host`)."""
    return "/" + urllib.parse.quote(path.lstrip("/\\"), safe=_PATH_SAFE)


def has_nul(scope: Scope) -> bool:
    """Whether the address carries a NUL character (`%00`), in its path or its query: PostgreSQL
    refuses NUL in any text, so a name or filter holding one could only fail in the database."""
    query = scope.get("query_string", b"")
    return "\x00" in scope.get("path", "") or b"\x00" in query or b"%00" in query


class Gate:
    """Token and Host checks on every request, and security headers on every response."""

    def __init__(self, app: ASGIApp, *, token: str | None, allowed_hosts: frozenset[str] | None) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if (
            self.token is None
            and self.allowed_hosts is not None
            and _host_name(headers.get("host", "")) not in self.allowed_hosts
        ):
            await self._plain(send, 403, "judgepanel view answers only on its loopback address")
            return
        if has_nul(scope):
            await self._plain(send, 400, "the address holds a NUL character (%00)")
            return
        from_query = False
        if self.token is not None:
            query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
            presented: list[str] = []
            auth = headers.get("authorization", "")
            if auth.lower().startswith("bearer "):
                presented.append(auth[7:].strip())
            cookie = SimpleCookie()
            try:
                cookie.load(headers.get("cookie", ""))
            except Exception:  # a malformed cookie header is no token
                cookie = SimpleCookie()
            if COOKIE in cookie:
                presented.append(cookie[COOKIE].value)
            if "token" in query:
                presented += query["token"]
                from_query = True
            ok = False
            for p in presented:  # every candidate compared, in constant time each
                ok = hmac.compare_digest(p.encode(), self.token) or ok
            if not ok:
                await self._plain(send, 401, "judgepanel view: a token is required (?token=… or Bearer)")
                return
            if from_query and scope["method"] in ("GET", "HEAD"):
                rest = [(k, v) for k, vs in query.items() if k != "token" for v in vs]
                location = scope.get("root_path", "") + _local_path(scope["path"])
                if rest:
                    location += "?" + urllib.parse.urlencode(rest)
                morsel = f"{COOKIE}={self.token.decode()}; Path=/; HttpOnly; SameSite=Strict"
                await send(
                    {
                        "type": "http.response.start",
                        "status": 303,
                        "headers": [
                            (b"location", location.encode("latin-1")),
                            (b"set-cookie", morsel.encode("latin-1")),
                            *SECURITY_HEADERS,
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    @staticmethod
    async def _plain(send: Send, status: int, text: str) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS],
            }
        )
        await send({"type": "http.response.body", "body": text.encode()})


def campaign_plots(payload: dict[str, Any], request: Any = None) -> dict[str, Any]:
    """The campaign page's SVGs: drawn with the cached page (`data.campaign`), else now."""
    return payload.get("_svg") or data.campaign_svgs(payload)


def _version() -> str:
    try:
        return metadata.version("judgepanel")
    except metadata.PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "dev"


def _jinja() -> Any:
    from judgepanel.report.iteration import word_diff
    from judgepanel.report.render import template_environment

    env = template_environment(HERE / "templates")

    def usd(v: float | None) -> str:
        return "unknown" if v is None else f"{v:.4f}"

    def duration(s: float | None) -> str:
        if s is None or not math.isfinite(s):
            return "—"
        s = round(s)
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"

    from judgepanel.analysis.pace import rate_number

    env.globals.update(
        usd=usd,
        duration=duration,
        word_diff=word_diff,
        version=_version(),
        rate=rate_number,
    )
    env.filters["q"] = lambda s: urllib.parse.quote(str(s), safe="")
    env.filters["pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    return env


def _annotation_routes(engine: Engine, db_label: str, n_boot: int) -> list[Any]:
    """The owner's pages of the annotation queues (`/annotate`, `/annotate/QUEUE` and their
    `/api` twins): read-only, over this same read-only engine (issue 32; `judgepanel.annotate`)."""
    from judgepanel.annotate.owner import owner_routes

    return owner_routes(engine, db_label=db_label, n_boot=n_boot)


def create_app(
    engine: Engine,
    *,
    token: str | None = None,
    allowed_hosts: frozenset[str] | None = LOOPBACK_HOSTS,
    db_label: str = "",
    n_boot: int = 200,
) -> ASGIApp:
    """The viewer over `engine` (which should be read-only: `store.readonly.read_only_engine`)."""
    env = _jinja()
    tracker = data.Tracker()
    stats_cache = StatsCache()

    def page(template: str, payload: dict[str, Any], request: Request, **extra: Any) -> HTMLResponse:
        html = env.get_template(template).render(
            d=payload,
            db_label=db_label,
            path=request.url.path,
            api="/api" + (request.url.path if request.url.path != "/" else "/campaigns"),
            query=request.url.query,
            **extra,
        )
        return HTMLResponse(html)

    def twin(
        template: str,
        compute: Callable[[Request], dict[str, Any]],
        extra: Callable[..., dict[str, Any]] | None = None,
    ) -> tuple[Callable[[Request], Awaitable[Response]], Callable[[Request], Awaitable[Response]]]:
        async def html(request: Request) -> Response:
            try:
                payload = await run_in_threadpool(compute, request)
                more = await run_in_threadpool(extra, payload, request) if extra else {}
            except (NotFound, BadInput) as exc:
                return _error_page(request, exc)
            return page(template, payload, request, **more)

        async def api(request: Request) -> Response:
            try:
                payload = await run_in_threadpool(compute, request)
            except (NotFound, BadInput) as exc:
                return JSON({"error": str(exc)}, status_code=404 if isinstance(exc, NotFound) else 400)
            return JSON({k: v for k, v in payload.items() if not k.startswith("_")})

        return html, api

    def _error_page(request: Request, exc: Exception) -> HTMLResponse:
        status = 404 if isinstance(exc, NotFound) else 400
        html = env.get_template("error.html.j2").render(
            d={"simulated": False},
            message=str(exc),
            status=status,
            db_label=db_label,
            path=request.url.path,
            api="",
        )
        return HTMLResponse(html, status_code=status)

    def iteration_html(payload: dict[str, Any], request: Request) -> dict[str, Any]:
        from judgepanel.report.iteration import iteration_section

        return {"section": iteration_section(engine, payload["iteration"])["html"]}

    def alignment_html(payload: dict[str, Any], request: Request) -> dict[str, Any]:
        from judgepanel.report.alignment import alignment_section

        return {"section": alignment_section(engine, payload["alignment"], links=True, banner=False)["html"]}

    def name(request: Request) -> str:
        return str(request.path_params["name"])

    routes: list[Any] = []

    def add(
        path: str, template: str, compute: Callable[[Request], dict[str, Any]], extra: Any = None
    ) -> None:
        html, api = twin(template, compute, extra)
        routes.append(Route(path, html, methods=["GET", "HEAD"]))
        routes.append(Route("/api" + (path if path != "/" else "/campaigns"), api, methods=["GET", "HEAD"]))

    add("/", "campaigns.html.j2", lambda r: data.campaigns(engine, tracker))
    add("/rubrics", "rubrics.html.j2", lambda r: data.rubrics(engine))
    add("/rubrics/{name}", "rubric.html.j2", lambda r: data.rubric(engine, name(r)))
    add("/repair", "iterations.html.j2", lambda r: data.iterations(engine))
    add("/repair/{name}", "iteration.html.j2", lambda r: data.iteration(engine, name(r)), iteration_html)
    add("/align", "alignments.html.j2", lambda r: data.alignments(engine))
    add(
        "/align/{name}",
        "alignment.html.j2",
        lambda r: data.alignment(engine, name(r)),
        alignment_html,
    )
    add(
        "/campaigns/{name}",
        "campaign.html.j2",
        lambda r: data.campaign(engine, name(r), n_boot=n_boot, cache=stats_cache),
        campaign_plots,
    )

    def pager(payload: dict[str, Any], request: Request) -> dict[str, Any]:
        params = dict(request.query_params)
        state = table.state_query(params)

        def cursor(key: str, value: int | None) -> str | None:
            return None if value is None else "&".join(x for x in (state, f"{key}={value}") if x)

        return {
            "state": state,
            "first_query": state,
            "next_query": cursor("after", payload["next_after"]),
            "prev_query": cursor("before", payload["prev_before"]),
            "sort_query": lambda col: table.sort_query(params, col),
        }

    add(
        "/campaigns/{name}/verdicts",
        "verdicts.html.j2",
        lambda r: data.verdicts(engine, name(r), data.parse_verdict_query(dict(r.query_params))),
        pager,
    )

    def case_nav(payload: dict[str, Any], request: Request) -> dict[str, Any]:
        state = table.state_query(dict(request.query_params))
        return {"state": state}

    def case_payload(r: Request) -> dict[str, Any]:
        params = dict(r.query_params)
        nav = data.parse_verdict_query({k: v for k, v in params.items() if k not in ("after", "before")})
        v = table.parse_cursor(params, "v")
        return data.case(engine, name(r), int(r.path_params["unit"]), nav, v)

    add("/campaigns/{name}/cases/{unit:int}", "case.html.j2", case_payload, case_nav)
    add(
        "/campaigns/{name}/requests/{rid:int}",
        "raw.html.j2",
        lambda r: data.raw(engine, name(r), int(r.path_params["rid"])),
    )
    add("/compare", "compare.html.j2", lambda r: compare_page(r))

    def compare_page(r: Request) -> dict[str, Any]:
        return data.compare(engine, dict(r.query_params), n_boot=n_boot, cache=stats_cache)

    # the campaigns list lives at `/`; `/campaigns` shows it too
    routes.append(
        Route("/campaigns", twin("campaigns.html.j2", lambda r: data.campaigns(engine, tracker))[0])
    )

    routes += _annotation_routes(engine, db_label, n_boot)

    async def busy(request: Request, exc: Exception) -> Response:
        # every connection of the pool is in use (many pages at once): say when to come back
        # rather than let the request wait on
        headers = {"Retry-After": str(BUSY_RETRY_AFTER_S)}
        text = "judgepanel view is busy: every database connection is in use; try again shortly"
        if request.url.path.startswith("/api/"):
            return JSON({"error": text}, status_code=503, headers=headers)
        return PlainTextResponse(text, status_code=503, headers=headers)

    async def not_found(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return JSON({"error": "not found"}, status_code=404)
        return PlainTextResponse("not found", status_code=404)

    app = Starlette(
        routes=[*routes, Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")],
        exception_handlers={404: not_found, PoolTimeout: busy},
    )
    return Gate(app, token=token, allowed_hosts=None if token else allowed_hosts)
