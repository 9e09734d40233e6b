"""Option values without pydantic where the answer is plain.

Typer 0.2x converts every option value through a pydantic `TypeAdapter`, built for each option of
the command that runs; importing pydantic and building those adapters cost a noticeable share of
every command's start-up. Almost all of judgepanel's options are `str`, `bool`, `int`, `float`
or `list[str]`, and almost all values a user types are in a form whose conversion is plain (`"7"`,
`"0.05"`, any string). For those this module converts the value itself, to exactly what pydantic
would give (a test compares the two on many inputs); everything else (another form: `" 7"`,
`"1_000"`, `"inf"`; another type: paths, choices, ranges, custom parsers) goes to Typer's own
conversion, so its values and error messages are unchanged.

Uses Typer's lazily built runtime-conversion hook (`_TyperParameter._runtime_param`); with a Typer
that has no such hook (before 0.2x, where click converts values) nothing is changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

try:
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - an older Typer converts through click, without pydantic
    _HOOK = False
else:
    _HOOK = True

__all__ = ["plain_value", "use_plain_coercion"]

_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?")
_MISSING = object()  # "not plain: ask Typer"


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


def _kind(param: Any) -> str | None:
    """The plain kind of a Typer parameter, or None when Typer must convert it."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None or desc.is_file or desc.is_path or desc.is_choice or desc.is_ranged:
        return None
    info = desc.parameter_info
    if info.parser is not None or getattr(info, "click_type", None) is not None:
        return None
    if desc.annotation is str:
        return "str"
    if desc.annotation is bool:
        return "bool"
    if desc.annotation is int:
        return "int"
    if desc.annotation is float:
        return "float"
    if desc.annotation == list[str]:
        return "list"
    return None


if _HOOK:

    @dataclass(frozen=True)
    class _PlainRuntimeParam(RuntimeParam):
        kind: str

        def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Any) -> Any:
            plain = plain_value(self.kind, value)
            if plain is not _MISSING:
                return plain
            return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)


def use_plain_coercion(cmd: Any) -> Any:
    """Give every plain parameter of `cmd` (and of its subcommands) the conversion above."""
    if not _HOOK:  # pragma: no cover
        return cmd
    for param in [*cmd.params, getattr(cmd, "_help_option", None)]:
        if isinstance(param, _TyperParameter) and param._runtime_param is None:
            kind = _kind(param)
            if kind is not None:
                desc = param.type_descriptor
                param._runtime_param = _PlainRuntimeParam(desc.parameter_info, desc.annotation, kind)
    for sub in getattr(cmd, "commands", {}).values():
        use_plain_coercion(sub)
    return cmd
