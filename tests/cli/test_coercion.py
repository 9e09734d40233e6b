"""The plain option conversion (`cli.coercion`) gives exactly what Typer's pydantic conversion gives.

Typer's own conversion (`typer._coercion.build_runtime_param`, a pydantic TypeAdapter) is the
reference: for every input the plain path converts, value and type must be equal; every other input
must be handed to Typer. End to end, commands parse their options to the same values either way.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import typer
import typer.main
from typer._coercion import build_runtime_param
from typer.core import TyperArgument, TyperOption

from judgepanel.cli.app import COMMANDS, load_command
from judgepanel.cli.coercion import _MISSING, _kind, plain_value, use_plain_coercion

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
    """('ok', value) or ('error', message) from Typer's own conversion."""
    multiple = kind == "list"
    opt = TyperOption(
        param_decls=["--x"],
        type_descriptor=_descriptor(ANNOTATION[kind]),
        multiple=multiple,
    )
    runtime = build_runtime_param(opt.type_descriptor)
    try:
        return "ok", runtime._coerce_value(value, param=opt, ctx=None)  # type: ignore[arg-type]
    except Exception as exc:
        return "error", str(exc)


def _descriptor(annotation: Any) -> Any:
    from typer._coercion import resolve_type_descriptor
    from typer.models import OptionInfo

    return resolve_type_descriptor(annotation, OptionInfo())


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
        for p in cmd.params:
            if isinstance(p, TyperOption | TyperArgument):
                kind = _kind(p)
                desc = p.type_descriptor
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
