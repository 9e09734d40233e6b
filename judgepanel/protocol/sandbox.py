"""The Jinja sandbox that user templates (`--template`) render in, with bounds.

Jinja's `SandboxedEnvironment` already refuses unsafe attribute access (``__class__``, …); a user's
template can still fail on one real item, or take the worker down, in ways the sandbox does not
bound. Here every render is bounded, and every way it can fail is one `TemplateProblem` line:

* a value that is none printed with ``{{ … }}`` (``{{ reference }}`` on an item without one) is an
  error, never the text ``None`` in a prompt; an undefined variable is one too (`StrictUndefined`);
* ``{% include %}``, ``{% import %}``, ``{% from … import %}`` and ``{% extends %}`` are refused
  when the template is compiled: a judge template is one file, and there is no loader;
* at most `MAX_LOOP_STEPS` loop iterations per render (all loops together, nested ones included),
  `MAX_CALL_DEPTH` nested calls (a recursive macro), `MAX_PROMPT_CHARS` characters of output (also
  for a string or list built by ``*`` / ``+``, checked before it is built), and `RENDER_SECONDS` of
  wall time (checked at every loop step and call);
* any other exception the template's own expressions raise (``1/0``, ``None + 1``) is reported as
  its type and message.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.nodes as nodes
import jinja2.sandbox

MAX_PROMPT_CHARS = 2_000_000  # characters one rendered prompt may hold
MAX_LOOP_STEPS = 1_000_000  # loop iterations in one render, all loops together
MAX_CALL_DEPTH = 40  # nested macro / function calls
RENDER_SECONDS = 2.0  # wall time one render may take
_LOOP = "jp_loop"  # the global every {% for %} iterates through (users cannot name it: unknown variable)
_FORBIDDEN = {
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "from … import",
    nodes.Extends: "extends",
}


class TemplateProblem(Exception):
    """A template that cannot render for one job; the message is one line."""


class _Limit(jinja2.TemplateError):
    """A bound was exceeded (raised inside the render, reported as a `TemplateProblem`)."""


@dataclass
class _Budget:
    deadline: float
    none_ok: bool = False  # print a none value as nothing (a sample job with every optional part absent)
    steps: int = 0
    depth: int = 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise _Limit(f"rendering took longer than {RENDER_SECONDS:g} s")


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("jp_template_budget", default=None)


def _loop(iterable: Iterable[Any]) -> Iterator[Any]:
    budget = _BUDGET.get()
    for x in iterable:
        if budget is not None:
            budget.steps += 1
            if budget.steps > MAX_LOOP_STEPS:
                raise _Limit(f"more than {MAX_LOOP_STEPS:,} loop iterations")
            if budget.steps % 1024 == 0:
                budget.tick()
        yield x


def _none_is_an_error(value: Any) -> Any:
    if value is None:
        budget = _BUDGET.get()
        if budget is not None and budget.none_ok:
            return ""
        raise jinja2.UndefinedError(
            "a value that is none was printed (e.g. `reference` on an item without one); "
            "guard it with {% if … is not none %}"
        )
    return value


def _size(x: Any) -> int | None:
    return len(x) if isinstance(x, str | list | tuple) else None


class BoundedEnvironment(jinja2.sandbox.SandboxedEnvironment):
    """`SandboxedEnvironment` with the bounds of the module docstring."""

    intercepted_binops = frozenset({"*", "+", "**"})

    def __init__(self, **options: Any) -> None:
        super().__init__(undefined=jinja2.StrictUndefined, finalize=_none_is_an_error, **options)
        self.globals[_LOOP] = _loop

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                size = _size(seq)
                if size is not None and isinstance(n, int) and size * n > MAX_PROMPT_CHARS:
                    raise _Limit(f"a repeated text or list would exceed {MAX_PROMPT_CHARS:,} characters")
        elif operator == "+":
            a, b = _size(left), _size(right)
            if a is not None and b is not None and a + b > MAX_PROMPT_CHARS:
                raise _Limit(f"a joined text or list would exceed {MAX_PROMPT_CHARS:,} characters")
        elif operator == "**" and isinstance(right, int | float) and abs(right) > 64:
            raise _Limit("an exponent above 64")
        return super().call_binop(context, operator, left, right)

    def call(self, context: jinja2.runtime.Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        budget = _BUDGET.get()
        if budget is None:
            return super().call(context, obj, *args, **kwargs)
        budget.tick()
        if budget.depth >= MAX_CALL_DEPTH:
            raise _Limit(f"calls nested deeper than {MAX_CALL_DEPTH} (a recursive macro?)")
        budget.depth += 1
        try:
            return super().call(context, obj, *args, **kwargs)
        finally:
            budget.depth -= 1


def compile_bounded(env: BoundedEnvironment, source: str) -> jinja2.Template:
    """The template with every loop counted; `TemplateProblem` ("LINE: why") for a syntax error
    or a statement that reaches outside the template."""
    try:
        tree = env.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"{exc.lineno}: {one_line(exc.message or exc)}") from None
    for kind, word in _FORBIDDEN.items():
        for node in tree.find_all(kind):
            raise TemplateProblem(
                f"{node.lineno}: {{% {word} %}} is not allowed (a judge template is one file)"
            )
    for loop in tree.find_all(nodes.For):
        loop.iter = nodes.Call(nodes.Name(_LOOP, "load"), [loop.iter], [], None, None, lineno=loop.lineno)
    try:
        return env.from_string(tree)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"{exc.lineno}: {one_line(exc.message or exc)}") from None


def render_bounded(template: jinja2.Template, context: Mapping[str, Any], *, none_ok: bool = False) -> str:
    """`template` rendered with `context` within the bounds; `TemplateProblem` (one line) if it
    fails. `none_ok` prints a none value as nothing instead of failing (for a sample job whose
    optional parts are all absent: real items are each rendered, and refused, on their own)."""
    token = _BUDGET.set(_Budget(deadline=time.monotonic() + RENDER_SECONDS, none_ok=none_ok))
    parts: list[str] = []
    n = 0
    try:
        for chunk in template.generate(**context):
            n += len(chunk)
            if n > MAX_PROMPT_CHARS:
                raise _Limit(f"the prompt exceeds {MAX_PROMPT_CHARS:,} characters")
            parts.append(chunk)
    except _Limit as exc:
        raise TemplateProblem(str(exc)) from None
    except jinja2.TemplateError as exc:
        raise TemplateProblem(one_line(exc.message or exc)) from None
    except RecursionError:
        raise TemplateProblem("recursion too deep") from None
    except Exception as exc:  # the template's own expressions: 1/0, None + 1, …
        raise TemplateProblem(f"{type(exc).__name__}: {one_line(exc)}") from None
    finally:
        _BUDGET.reset(token)
    return "".join(parts)


def one_line(text: object) -> str:
    return " ".join(str(text).split())
