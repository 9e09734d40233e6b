"""Options that several commands take together, declared once as a frozen dataclass: parsing only.

`option_group(Group, OPTIONS, after=N)` adds the dataclass's fields, as the Typer options in
`OPTIONS` (field name -> `typer.Option(…)`), to a command's signature after its first N
parameters, and hands them to the command as one `Group` in the keyword `options`; so each command
lists only its own options. `declared` is how such a wrapper tells Typer its parameters;
`cli.selection` uses it for the rater selection, which has its own placement rules.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any


def option_group(
    group: type[Any], options: Mapping[str, Any], *, after: int
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command `f(<first `after` parameters>, <own…>, *, options: group)` becomes one Typer sees
    with `group`'s fields as options (in the dataclass's order) after its first `after` parameters."""
    hints = typing.get_type_hints(group)
    names = [f.name for f in dataclasses.fields(group)]
    shared = [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=options[n], annotation=hints[n])
        for n in names
    ]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = [
            p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "options"
        ]
        params = [*own[:after], *shared, *own[after:]]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> None:
            given = group(**{n: kwargs.pop(n) for n in names})
            command(*args, **kwargs, options=given)

        return declared(run, params)

    return decorate


def declared(run: Callable[..., None], params: list[inspect.Parameter]) -> Callable[..., None]:
    """`run` (a `functools.wraps` wrapper of a command) declared as taking `params`: Typer reads a
    command's options from `inspect.signature` and its type hints, and `cli.coercion` from the
    function `inspect.unwrap` finds, so all three must say `params` (every one keyword-only but the
    context, which Typer passes by name)."""
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params], return_annotation=None
    )
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    del run.__wrapped__  # type: ignore[attr-defined]
    return run
