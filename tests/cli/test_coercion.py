"""The plain option conversion (`cli.coercion`) gives exactly what Typer's pydantic conversion gives.

Typer's own conversion is the reference, reached through its public API (issue 31 §3): a one-option
command whose default is the input, parsed by Typer with no arguments (click converts a default as
it converts a typed value). For every input the plain path converts, value and type must be equal;
every other input must be handed to Typer. End to end, commands parse their options to the same
values either way.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import typer
import typer.main
from typer.core import TyperArgument, TyperOption

from judgepanel.cli.app import COMMANDS, load_command
from judgepanel.cli.coercion import _MISSING, declared_kinds, plain_value, use_plain_coercion

INPUTS: dict[str, list[Any]] = {
    "str": ["", "x", " a b ", "é", "\udcff", "sqlite:///j.db", "--", "0", b"bytes", 7, None],
    "bool": [True, False, "true", "0", "", 1, None],
    "int": ["0", "7", "-3", "007", "-0", "+5", " 5", "5 ", "1_000", "5.0", "1e3", "x", "", "9" * 18, "9" * 30,
            5, -2, True, 2.0, "٣", None],
    "float": ["0", "-0", "-0.0", "00.5", "1e5", "0.05", "-1.5", ".5", "5.", "1e-3", "1E+10", "-2.5e7", "1.5e400", "inf", "nan", "1_0",
              " 1.5", "0x10", "", "x", "0." + "1" * 40, "3" * 31, 3, -2, 2**60, 1.5, True, None],
    "list": [[], ["a", "b"], ("a", "é"), ["a", 1], "ab", (), None],
}  # fmt: skip
ANNOTATION = {"str": str, "bool": bool, "int": int, "float": float, "list": list[str]}


def _typer_value(kind: str, value: Any) -> tuple[str, Any]:
    """('ok', value) or ('error', message) from Typer's own conversion of `value`, the default of an
    option annotated as `kind` (no plain path: the command is Typer's as built)."""
    got: dict[str, Any] = {}
    app = typer.Typer(add_completion=False)

    def run(x: Any = typer.Option(value, "--x")) -> None:
        got["x"] = x

    run.__annotations__ = {"x": ANNOTATION[kind], "return": None}
    app.command()(run)
    try:
        typer.main.get_command(app).main(args=[], prog_name="run", standalone_mode=False)
    except Exception as exc:
        return "error", str(exc)
    return "ok", got["x"]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return (
        type(a) is type(b)
        and a == b
        and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))
    )


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_plain_conversion_equals_typers(kind: str) -> None:
    plain_count = 0
    for value in INPUTS[kind]:
        if value is None:
            continue  # Typer answers None itself, before any conversion
        plain = plain_value(kind, value)
        if plain is _MISSING:
            continue
        plain_count += 1
        status, expected = _typer_value(kind, value)
        assert status == "ok", (kind, value, expected)
        assert _same(plain, expected), (kind, value, plain, expected)
    assert plain_count >= 2  # the fast path is exercised, not skipped


def test_what_the_plain_path_leaves_to_typer() -> None:
    for kind, value in [
        ("int", " 5"),
        ("int", "1_000"),
        ("int", "5.0"),
        ("int", "9" * 30),
        ("int", True),
        ("float", "inf"),
        ("float", "1_0"),
        ("float", True),
        ("float", 2**60),
        ("str", b"bytes"),
        ("str", 7),
        ("bool", "true"),
        ("list", ["a", 1]),
        ("list", "ab"),
    ]:
        assert plain_value(kind, value) is _MISSING, (kind, value)


def test_every_plain_parameter_of_every_command_is_a_kind_typer_converts_alike() -> None:
    """Each parameter the plain path takes is one of the kinds compared above; paths, choices,
    ranges and custom parsers stay with Typer."""
    seen: set[str] = set()

    def walk(cmd: Any) -> None:
        kinds = declared_kinds(cmd.callback)
        for p in cmd.params:
            if isinstance(p, TyperOption | TyperArgument):
                kind = kinds.get(p.name)
                desc = p.type_descriptor  # Typer's own reading of the declaration, as the reference
                if kind is None:
                    assert (
                        desc.is_path or desc.is_choice or desc.is_ranged or desc.parameter_info.parser
                    ) or desc.annotation not in (str, int, float, bool), (cmd.name, p.name)
                else:
                    assert desc.annotation == ANNOTATION[kind], (cmd.name, p.name)
                    seen.add(kind)
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    for name in COMMANDS:
        walk(load_command(name))
    assert seen == set(ANNOTATION)


def _parsed(cmd: Any, args: list[str]) -> dict[str, Any]:
    got: dict[str, Any] = {}

    app = typer.Typer(add_completion=False)

    @app.command()
    def run(
        name: str = typer.Argument(...),
        n: int = typer.Option(3, "--n"),
        rate: float | None = typer.Option(None, "--rate"),
        ratio: float = typer.Option(0.5, "--ratio"),
        tag: list[str] | None = typer.Option(None, "--tag"),
        flag: bool = typer.Option(False, "--flag"),
        label: str | None = typer.Option(None, "--label"),
    ) -> None:
        got.update(name=name, n=n, rate=rate, ratio=ratio, tag=tag, flag=flag, label=label)

    click_cmd = typer.main.get_command(app)
    if cmd is not None:
        cmd(click_cmd)
    try:
        click_cmd.main(args=args, prog_name="run", standalone_mode=False)
    except typer.TyperException as exc:  # a bad value: the message the user sees
        got["error"] = exc.format_message()
    return got


@pytest.mark.parametrize(
    "args",
    [
        ["x"],
        [
            "x",
            "--n",
            "7",
            "--rate",
            "0.25",
            "--ratio",
            "2",
            "--tag",
            "a",
            "--tag",
            "b",
            "--flag",
            "--label",
            "é",
        ],
        ["x", "--n", " 7", "--rate", "1e400", "--ratio", "inf"],
        ["x", "--n", "seven"],
        ["x", "--rate", "fast"],
        ["x", "--n", "1_000", "--rate", "-0"],
    ],
)
def test_a_command_parses_the_same_with_and_without_the_plain_path(args: list[str]) -> None:
    plain = _parsed(use_plain_coercion, args)
    typer_own = _parsed(None, args)
    assert plain.keys() == typer_own.keys()
    assert ("error" in plain) == ("seven" in args or "fast" in args)
    for key in plain:
        assert _same(plain[key], typer_own[key]) or plain[key] == typer_own[key], (
            key,
            plain[key],
            typer_own[key],
        )


def test_a_missing_required_value_is_typers_error() -> None:
    """A required argument left out goes to Typer's own conversion, for its message."""
    plain = _parsed(use_plain_coercion, ["--n", "7"])
    typer_own = _parsed(None, ["--n", "7"])
    assert "error" in plain and plain == typer_own


def test_a_command_whose_function_cannot_be_found_is_left_to_typer() -> None:
    """Where a command does not lead back to its function (a Typer that wraps it otherwise), no
    parameter is given the plain conversion: Typer converts every value, as without this module."""
    app = typer.Typer(add_completion=False)

    @app.command()
    def run(n: int = typer.Option(3, "--n")) -> None:
        pass

    cmd = typer.main.get_command(app)
    assert declared_kinds(cmd.callback) == {"n": "int"}
    del cmd.callback.__wrapped__  # type: ignore[union-attr]
    assert declared_kinds(cmd.callback) == {}
    use_plain_coercion(cmd)
    assert all("process_value" not in vars(p) for p in cmd.params if p.name == "n")


def test_each_group_built_lazily_has_the_commands_typer_builds_whole() -> None:
    """`app._lazy_group` (one command at a time, on first use) gives the commands, options and help
    Typer builds for the whole app at once (`typer.main.get_group`)."""
    import importlib

    from judgepanel.cli.app import _lazy_group

    def shape(cmd: Any) -> list[object]:
        return [
            cmd.name,
            cmd.help,
            [
                (p.name, tuple(p.opts), p.required, repr(p.default), getattr(p, "help", None))
                for p in cmd.params
            ],
        ]

    groups = 0
    for name, (module, attr, _) in COMMANDS.items():
        obj = getattr(importlib.import_module(module), attr)
        if not isinstance(obj, typer.Typer):
            continue
        lazy, whole = _lazy_group(obj, name), typer.main.get_group(obj)
        whole.name = name
        assert list(lazy.commands) == list(whole.commands), name
        assert shape(lazy) == shape(whole), name
        for sub in whole.commands:
            assert shape(lazy.commands[sub]) == shape(whole.commands[sub]), (name, sub)
        groups += 1
    assert groups >= 10
