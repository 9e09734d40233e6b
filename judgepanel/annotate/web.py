"""What the annotation pages share: their templates, static files and JSON responses (the viewer
answers with the same `JSON`).

Boundary: rendering only; the owner's routes are in `annotate.owner`, the annotators' in
`annotate.annotator`. Templates autoescape everything (queue names, instructions, item texts,
comments and annotator names are all stored text); the pages' script is a file served from
`/annotate-static/`, so the Content-Security-Policy of the viewer (scripts from the server itself
only, no inline script) applies unchanged.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

HERE = Path(__file__).resolve().parent
STATIC_PATH = "/annotate-static"


def json_safe(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [json_safe(x) for x in v]
    return v


class JSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(json_safe(content), default=str, ensure_ascii=False, allow_nan=False).encode()


@cache
def templates() -> Any:
    from judgepanel.report.render import template_environment

    env = template_environment(HERE / "templates")
    env.globals.update(static=STATIC_PATH)
    return env


def page(template: str, code: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(templates().get_template(template).render(**context), status_code=code)


def static_mount() -> Mount:
    return Mount(STATIC_PATH, StaticFiles(directory=str(HERE / "static")), name="annotate-static")
