"""The options of every `metrics` sub-command, pinned (issue 31 §4): the rater-selection block
that agreement, matrix, truth and heldout share is declared once (`cli/selection.py`); each
option's names, order, default, help and flags stay as `metrics_options.json` recorded them
from the commands as they were written before that."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from judgepanel.cli.metrics_cmd import app

PINNED = Path(__file__).with_name("metrics_options.json")


def _options() -> dict[str, list[dict[str, Any]]]:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return {
        name: [
            {
                "name": p.name,
                "opts": list(p.opts),
                "secondary_opts": list(p.secondary_opts),
                "default": p.default,
                "required": p.required,
                "hidden": bool(getattr(p, "hidden", False)),
                "is_flag": bool(getattr(p, "is_flag", False)),
                "help": getattr(p, "help", None),
                "metavar": p.metavar,
                "show_default": getattr(p, "show_default", None),
            }
            for p in cmd.params
        ]
        for name, cmd in sorted(group.commands.items())
    }


def test_every_metrics_option_is_as_pinned() -> None:
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(_options()))  # the same JSON round trip as the pinned file
    assert list(now) == list(pinned)
    for command, options in pinned.items():
        assert now[command] == options, command


if __name__ == "__main__":  # re-pin only on purpose: `python -m tests.cli.test_metrics_options`
    PINNED.write_text(json.dumps(_options(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
