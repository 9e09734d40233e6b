"""Option values without pydantic where the answer is plain.

Typer 0.2x converts every option value through a pydantic `TypeAdapter`, built for each option of
the command that runs; importing pydantic and building those adapters cost a noticeable share of
every command's start-up (about 0.1 s of CPU). Almost all of judgepanel's options are `str`,
`bool`, `int`, `float` or `list[str]`, and almost all values a user types are in a form whose
conversion is plain (`"7"`, `"0.05"`, any string). For those this module converts the value
itself, to exactly what Typer would give (tests/cli/test_coercion.py compares the two on many
inputs); everything else (another form: `" 7"`, `"1_000"`, `"inf"`; another type: paths,
choices, ranges, custom parsers) goes to Typer's own conversion, so its values and error messages
are unchanged.

With public APIs only (issue 31 §3; it used Typer's private `typer._coercion` hook before). A
parameter's kind is read from its declaration, the command function's annotation and its
`typer.Option(…)` / `typer.Argument(…)` (`inspect.signature`, `typing.get_type_hints`); the
conversion is attached through click's documented hook for turning a parameter's raw value into
its value, `Parameter.process_value(ctx, value)`: each plain parameter of a built command gets its
own, which converts a plain value and calls the parameter's callback as click does, and hands
every other value to the parameter's own (Typer's) `process_value`. With a Typer whose commands do
not lead back to their function (`inspect.unwrap`), nothing is changed: Typer converts every value,
as slowly as it does without this module.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["declared_kinds", "plain_value", "use_plain_coercion"]

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?")
_MISSING = object()  # "not plain: ask Typer"
_KINDS: dict[Any, str] = {str: "str", bool: "bool", int: "int", float: "float", list[str]: "list"}
# What a `typer.Option` / `typer.Argument` declares when Typer converts its value as a plain one:
# each of these settings at its default (a parser, a range, a path check, a prompt or a flag value
# make Typer convert otherwise). Read with getattr, so a Typer without one of them is no obstacle.
_PLAIN_SETTINGS: dict[str, Any] = {
    "parser": None,
    "click_type": None,
    "min": None,
    "max": None,
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "readable": True,
    "resolve_path": False,
    "allow_dash": False,
    "path_type": None,
    "prompt": False,
    "flag_value": None,
}


def plain_value(kind: str, value: Any) -> Any:
    """`value` converted to `kind` (str, bool, int, float or list) when the conversion is plain, else
    `_MISSING`."""
    t = type(value)
    if kind == "str":
        return value if t is str else _MISSING
    if kind == "bool":
        return value if t is bool else _MISSING
    if kind == "int":
        if t is int:
            return value
        return int(value) if t is str and _INT.fullmatch(value) else _MISSING
    if kind == "float":
        if t is float:
            return value
        if t is int and -(2**53) <= value <= 2**53:
            return float(value)
        return float(value) if t is str and _FLOAT.fullmatch(value) else _MISSING
    if kind == "list" and t in (list, tuple) and all(type(v) is str for v in value):
        return list(value)
    return _MISSING


def _kind(annotation: Any, declared: Any) -> str | None:
    """The plain kind of a parameter annotated `annotation` whose default is `declared` (a
    `typer.Option(…)`, `typer.Argument(…)` or a plain default), or None when Typer must convert it."""
    if any(getattr(declared, k, v) != v for k, v in _PLAIN_SETTINGS.items()):
        return None
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) and type(None) in args:  # `X | None`: Typer reads X
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    try:
        return _KINDS.get(annotation)
    except TypeError:  # an unhashable annotation: not one of the plain ones
        return None


def declared_kinds(callback: Callable[..., Any] | None) -> dict[str, str]:
    """parameter name -> plain kind, for the parameters of the function behind a command's
    `callback` (Typer wraps it; `inspect.unwrap` finds it) that Typer converts plainly."""
    if callback is None:
        return {}
    fn = inspect.unwrap(callback)
    try:
        hints = typing.get_type_hints(fn)
        params = inspect.signature(fn).parameters
    except (NameError, TypeError, ValueError):  # not a function we can read: Typer converts
        return {}
    out: dict[str, str] = {}
    for name, p in params.items():
        kind = _kind(hints.get(name), p.default) if name in hints else None
        if kind is not None:
            out[name] = kind
    return out


def _plain_process_value(param: Any, kind: str, own: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`param.process_value` converting a plain value itself, as click's does: the value converted
    (no value: None, or `()` for a parameter of many values, as click and Typer give), then the
    parameter's callback. A missing value of a required parameter (the error) and every value that
    is not plain go to `own`, Typer's."""

    def process_value(ctx: Any, value: Any) -> Any:
        if value is None:
            plain = () if param.multiple or param.nargs == -1 else None
        else:
            plain = plain_value(kind, value)
        if plain is _MISSING or (param.required and (plain is None or plain in ((), []))):
            return own(ctx, value)
        callback = param.callback
        return plain if callback is None else callback(ctx, param, plain)

    return process_value


def _help_option(cmd: Any) -> Any:
    """The command's `--help` flag (click makes it on request and keeps it), or None."""
    get = getattr(cmd, "get_help_option", None)
    if get is None:
        return None
    import typer

    return get(typer.Context(cmd, info_name=cmd.name))


def use_plain_coercion(cmd: Any) -> Any:
    """Give every plain parameter of `cmd` (and of its subcommands) the conversion above: those its
    function declares plainly, and its `--help` flag (no declaration: a flag is a bool)."""
    kinds = declared_kinds(getattr(cmd, "callback", None))
    help_flag = _help_option(cmd)
    for param in [*getattr(cmd, "params", []), *([help_flag] if help_flag is not None else [])]:
        kind = (
            "bool" if param is help_flag and getattr(param, "is_flag", False) else kinds.get(param.name or "")
        )
        if kind is None or "process_value" in vars(param):  # not plain, or given already
            continue
        vars(param)["process_value"] = _plain_process_value(param, kind, param.process_value)
    for sub in getattr(cmd, "commands", {}).values():
        use_plain_coercion(sub)
    return cmd
