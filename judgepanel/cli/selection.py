"""The rater selection of `metrics agreement / matrix / truth / heldout`: its options, declared
once, and what the commands do with them (read the matrix they name, say in `--json` which raters
a figure is over). Parsing and wording only; the matrix is read by `store.matrices`.

`selection_options` adds the shared options to a command's signature, so each command lists only
its own: `--dataset`/`--pairs` (in the order the command names), `--dimension`, `--raters`,
`--group`, `--with-judges` after the context, `--exclude-duplicates` before the last option
(`--json`). The command receives them as one `Selection`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

from judgepanel.cli.context import state
from judgepanel.cli.option_group import declared
from judgepanel.errors import BadInput

if TYPE_CHECKING:
    from judgepanel.metrics.matrix import RatingMatrix
    from judgepanel.store.matrices import SelectedMatrix

DATASET = typer.Option(None, "--dataset", help="Dataset whose item labels to use.")
PAIRS = typer.Option(None, "--pairs", help="Pair set whose A/B/T labels to use.")
DIMENSION = typer.Option(None, "--dimension", help="Label dimension (item labels only).")
RATERS = typer.Option(
    None, "--raters", help="Comma-separated rater names, humans or judges (default: the human raters)."
)
GROUP = typer.Option(
    None, "--group", help="Only raters of this group: human, judge, or an imported one (expert, crowd)."
)
WITH_JUDGES = typer.Option(
    None, "--with-judges", help="Add judges to the selection: comma-separated names, or all."
)
EXCLUDE = typer.Option(
    None, "--exclude-duplicates", help="Leave out the items `data duplicates` flags for this group."
)


@dataclass(frozen=True)
class Selection:
    """The shared options as given (None: not given)."""

    dataset: str | None = None
    pairs: str | None = None
    dimension: str | None = None
    raters: str | None = None
    group: str | None = None
    with_judges: str | None = None
    exclude_duplicates: str | None = None


def _option(name: str, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=str | None)


def selection_options(*, pairs_first: bool) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command `f(ctx, <own options…>, json_, *, selection: Selection)` becomes one Typer sees
    with the shared options in their places (see the module's docstring); `pairs_first` puts
    `--pairs` before `--dataset`, as `matrix`, `truth` and `heldout` have always listed them."""
    first = (
        [("pairs", PAIRS), ("dataset", DATASET)] if pairs_first else [("dataset", DATASET), ("pairs", PAIRS)]
    )
    leading = [
        _option(n, o)
        for n, o in [
            *first,
            ("dimension", DIMENSION),
            ("raters", RATERS),
            ("group", GROUP),
            ("with_judges", WITH_JUDGES),
        ]
    ]
    shared = [*(p.name for p in leading), "exclude_duplicates"]

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        own = [
            p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "selection"
        ]
        params = [own[0], *leading, *own[1:-1], _option("exclude_duplicates", EXCLUDE), own[-1]]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> None:
            chosen = Selection(**{n: kwargs.pop(n) for n in shared})
            command(*args, **kwargs, selection=chosen)

        return declared(run, params)

    return decorate


def _comma_list(value: str | None, empty: str) -> tuple[str, ...] | None:
    """The names of a comma-separated option (None when not given); `empty` when it names none."""
    if value is None:
        return None
    found = tuple(n.strip() for n in value.split(",") if n.strip())
    if not found:
        raise BadInput(empty)
    return found


def parse_raters(raters: str | None) -> tuple[str, ...] | None:
    return _comma_list(raters, "--raters needs at least one name")


def parse_with_judges(with_judges: str | None) -> tuple[str, ...] | None:
    from judgepanel.metrics.matrix import ALL_JUDGES

    found = _comma_list(with_judges, "--with-judges needs judge names or all")
    if found is not None and ALL_JUDGES in found and len(found) > 1:
        raise BadInput("--with-judges takes either all or judge names, not both")
    return found


def select(ctx: typer.Context, s: Selection, categories: str | None = None) -> SelectedMatrix:
    """The rating matrix the shared selection options name."""
    from judgepanel.store.matrices import MatrixRequest, select_matrix

    cats = None if categories is None else tuple(c.strip() for c in categories.split(","))
    return select_matrix(
        state(ctx).engine(),
        MatrixRequest(
            s.dataset,
            s.pairs,
            s.dimension,
            parse_raters(s.raters),
            s.group,
            s.exclude_duplicates,
            with_judges=parse_with_judges(s.with_judges),
            categories=cats,
        ),
    )


def selection_json(
    m: RatingMatrix, raters: str | None, group: str | None, with_judges: str | None
) -> dict[str, Any]:
    """The `--json` key `selection`: which raters a figure is over, and by which rule."""
    from judgepanel.metrics.matrix import is_machine

    if raters is not None:
        rule = "named (--raters)"
    elif group is not None:
        rule = f"group {group}"
    else:
        rule = "human raters (default)"
    if with_judges is not None:
        rule += f" + judges ({with_judges})"
    machine = [n for n, k in zip(m.rater_names, m.kinds, strict=True) if is_machine(k)]
    return {
        "rule": rule,
        "raters": list(m.rater_names),
        "humans": m.n_raters - len(machine),
        "judges": machine,
    }


def source(sel: SelectedMatrix, pairs: str | None) -> dict[str, Any]:
    """The `--json` keys that say where the labels came from; with campaign judges among the
    raters also `score_source`: a logprob-scored judge's column holds its argmax verdict (these
    coefficients compare categories)."""
    from judgepanel.metrics.matrix import JUDGE

    out: dict[str, Any] = {"dataset": sel.dataset, "pairs": pairs, "dimension": sel.matrix.dimension}
    if JUDGE in sel.matrix.kinds:
        out["score_source"] = "argmax"
    return out


def provenance(sel: SelectedMatrix, s: Selection) -> dict[str, Any]:
    """The `--json` keys `selection`, `dataset`, `pairs`, `dimension`, in that order: which raters
    a figure is over and where their labels came from."""
    return {"selection": selection_json(sel.matrix, s.raters, s.group, s.with_judges), **source(sel, s.pairs)}


def labels_place(sel: SelectedMatrix, pairs: str | None) -> str:
    return f"pair set {pairs}" if pairs else f"{sel.dataset}/{sel.matrix.dimension}"
