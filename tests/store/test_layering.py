"""The store sits below the runner: nothing in `judgepanel.store` may import the runner, the CLI or
the layers above them (DESIGN.md, Layering). Checked statically over every store module and
dynamically in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import judgepanel.store

ABOVE = ("judgepanel.runner", "judgepanel.cli", "judgepanel.repair", "judgepanel.report")
STORE = Path(judgepanel.store.__file__).parent


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return out


def test_no_store_module_imports_an_upper_layer() -> None:
    offenders = {
        f"{p.relative_to(STORE.parent)}: {m}"
        for p in sorted(STORE.rglob("*.py"))
        for m in _imports(p)
        if m.startswith(ABOVE)
    }
    assert offenders == set()


def test_importing_the_campaign_store_loads_no_runner() -> None:
    code = (
        "import sys, judgepanel.store.campaigns as c;"
        "print(sorted(m for m in sys.modules if m.startswith(('judgepanel.runner', 'judgepanel.cli'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_stay_importable_from_the_old_paths() -> None:
    from judgepanel.protocol import plan as low
    from judgepanel.runner import plan as shim
    from judgepanel.store import campaigns

    for name in ("CampaignSpec", "PlannedJob", "Unit", "plan_jobs", "job_key"):
        assert getattr(shim, name) is getattr(low, name)
    for name in campaigns.__all__:
        assert getattr(campaigns, name) is not None
    assert campaigns.write_batch.__module__ == "judgepanel.store.campaigns.results"
