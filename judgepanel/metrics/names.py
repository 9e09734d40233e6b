"""The names the agreement statistics accept, in a module that imports nothing, so that the CLI
can list them in `--help` without loading numpy or scipy (`judgepanel.metrics.agreement` and
`.bootstrap` read them from here too: one list serves the library and the CLI)."""

from __future__ import annotations

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
WEIGHT_NAMES: tuple[str, ...] = (
    "identity",
    "linear",
    "quadratic",
    "ordinal",
    "radical",
    "ratio",
    "circular",
    "bipolar",
)
METRICS: tuple[str, ...] = (
    "percent",
    "cohen",
    "cohen-linear",
    "cohen-quadratic",
    "fleiss",
    "alpha",
    "ac1",
    "scott",
    "spearman",
    "kendall",
)
METHODS: tuple[str, ...] = ("percentile", "bca")  # bootstrap interval methods
RESAMPLE_MODES: tuple[str, ...] = ("groups", "items")  # what a bootstrap draws: whole groups or items
# the verdict a comparison states when its items come from fewer than 5 groups (issue 30 §1)
TOO_FEW_GROUPS = "too few groups"
