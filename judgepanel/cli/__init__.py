"""The `judgepanel` command: a thin Typer shell over the library.

Each command group lives in its own module and is registered in `app.py`. `main()` turns every
`JudgepanelError` into one line on stderr and its exit code (2 for bad input, 1 otherwise).
"""

from __future__ import annotations

from judgepanel.cli.app import app, main

__all__ = ["app", "main"]
