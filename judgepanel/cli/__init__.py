"""The `judgepanel` command: a thin Typer shell over the library.

Each command group lives in its own module and is registered in `app.py`. `main()` turns every
`JudgepanelError` into one line on stderr and its exit code (2 for bad input, 1 otherwise).
Importing the command groups (numpy, scipy, SQLAlchemy, the SDKs) takes a noticeable moment, so
it happens inside `main()`, where a Ctrl-C during start-up is one line and exit 130 too.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> None:
    try:
        from judgepanel.cli.app import main as run
    except KeyboardInterrupt:
        print("judgepanel: interrupted", file=sys.stderr)
        sys.exit(130)
    run(argv)


def __getattr__(name: str) -> Any:
    if name == "app":
        from judgepanel.cli.app import app

        return app
    raise AttributeError(name)
