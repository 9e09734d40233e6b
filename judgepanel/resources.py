"""Where the shipped data folders live.

In a checkout (or an editable install) they are the top-level `migrations/`, `prompts/` and
`rubrics/`; in an installed wheel they are copies under `judgepanel/_bundled/` (see the
`force-include` table in pyproject.toml). The top-level folders are the source of truth.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

Kind = Literal["migrations", "prompts", "rubrics"]

_PACKAGE = Path(__file__).resolve().parent


@cache  # the installation's layout does not change while it runs; asked per prompt
def resource_dir(kind: Kind) -> Path:
    bundled = _PACKAGE / "_bundled" / kind
    if bundled.is_dir():
        return bundled
    checkout = _PACKAGE.parent / kind
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"judgepanel's {kind}/ folder is missing from this installation")


def sample_path(name: str) -> Path:
    """A file of the bundled sample data (shipped inside the package itself)."""
    return _PACKAGE / "datasets" / "samples" / name
