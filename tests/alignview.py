"""Alignments to look at: the bundled SummEval sample with a repair iteration and one alignment per
method (sim judges, sim editor), shared by the alignment report and viewer tests; and hostile text
planted in every stored text an alignment page shows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests import xss
from tests.helpers import built_once, cli, copy_db, shared_root

METHODS = {"f": "fewshot", "i": "instructions", "g": "grid"}


def build(db: str) -> None:
    """Alignments `f` (fewshot, k=3), `i` (instructions, 2 rounds), `g` (grid with sim:judge-b),
    repair iteration `rp`, and `align compare f --repair rp` made."""
    from tests.align.conftest import ok, run_args
    from tests.repair.conftest import PANEL_SIM, prepare_db
    from tests.repair.conftest import run_args as repair_args

    prepare_db(db)
    assert cli(*repair_args("rp", PANEL_SIM, "sim:editor"), "--json", db=db).code == 0
    ok(*run_args("f", "fewshot", "--k", "3"), db=db)
    ok(*run_args("i", "instructions", "--editor", "sim:editor", "--rounds", "2"), db=db)
    ok(*run_args("g", "grid", "--grid-judge", "sim:judge-b"), db=db)
    r = cli("align", "compare", "f", "--repair", "rp", "--json", db=db)
    assert r.code == 0, r.stderr


def world(tmp_path_factory: pytest.TempPathFactory, folder: str) -> str:
    """A private copy (in a new temporary `folder`) of the world `build` makes with its repair
    iteration, built once per test run for every module and xdist worker that asks."""
    src = built_once(shared_root(tmp_path_factory.getbasetemp()), "alignview", build)
    return copy_db(src, tmp_path_factory.mktemp(folder), "a.db")


def _load(v: Any) -> Any:
    return json.loads(v) if isinstance(v, str) else v


def plant(url: str) -> None:
    """Hostile text in the item texts, every instruction text, example candidate, editor reason
    and grid judge name an alignment stores."""
    p = xss.TEXT
    eng = create_engine(url)
    with eng.begin() as conn:
        conn.execute(text("UPDATE item SET output = :p || output"), {"p": p})
        for aid, templates, choices in conn.execute(
            text("SELECT id, templates, choices FROM alignment")
        ).all():
            t, c = _load(templates), _load(choices)
            for side in ("original", "aligned"):
                t[side]["instructions"] = p + "\n" + t[side]["instructions"]
                t[side]["judge"] = t[side]["judge"] + p
                for e in t[side].get("examples", []):
                    e["candidate"] = p + e["candidate"]
                    e["item"] = e["item"] + xss.NAME
            for r in c.get("rounds", []):
                r["reason"] = p
            for g in c.get("configs", []):
                g["judge"] = g["judge"] + p
            if "examples" in c:
                c["examples"]["items"] = [i + xss.NAME for i in c["examples"]["items"]]
                c["examples"]["strata"] = {xss.NAME: 1}
            conn.execute(
                text("UPDATE alignment SET templates = :t, choices = :c WHERE id = :i"),
                {"t": json.dumps(t), "c": json.dumps(c), "i": aid},
            )
    eng.dispose()
