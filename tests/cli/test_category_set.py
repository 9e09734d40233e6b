"""The category set of a coefficient comes from the raters it is over: on the alt-test panels wax
and lgbteen the LLMs use labels no human used (None-of-the-above, Ignore), which must not enter a
human-only AC1. Checked against irrCAC on the humans' labels read from the raw panel files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from irrCAC.raw import CAC

from tests.helpers import cli, migrate_db

PANELS = {"wax": "None-of-the-above", "lgbteen": "Ignore"}  # panel -> a label only LLMs used


def _humans(folder: Path) -> pd.DataFrame:
    """Units × human annotators, labels as given, straight from the panel file."""
    raw: dict[str, dict[str, Any]] = json.loads((folder / "human_annotations.json").read_text())
    return pd.DataFrame(raw).sort_index()


def _ac1(frame: pd.DataFrame, categories: list[str] | None = None) -> float:
    kept = frame.dropna(how="all").reset_index(drop=True)
    cac = CAC(kept, digits=14) if categories is None else CAC(kept, categories=categories, digits=14)
    value: float = cac.gwet()["est"]["coefficient_value"]
    return value


def _agreement(db: str, panel: str, *extra: str) -> dict[str, Any]:
    r = cli("metrics", "agreement", "--dataset", panel, "--metric", "ac1", *extra, "--json", db=db)
    assert r.code == 0, r.stderr
    out: dict[str, Any] = r.json()
    return out


@pytest.mark.parametrize("panel", sorted(PANELS))
def test_human_ac1_uses_the_humans_categories(panel: str, sqlite_url: str, shared_data: Path) -> None:
    folder = shared_data / "alttest" / panel
    migrate_db(sqlite_url)
    assert cli("data", "import-alttest", str(folder), "--name", panel, db=sqlite_url).code == 0
    humans = _humans(folder)
    used = sorted({str(v) for v in humans.stack().tolist()})
    llm_only = PANELS[panel]
    assert llm_only not in used  # the premise: only LLMs used it

    for extra in ((), ("--group", "human")):
        out = _agreement(sqlite_url, panel, *extra)
        assert out["categories"] == used and out["n_raters"] == humans.shape[1]
        assert out["value"] == pytest.approx(_ac1(humans), abs=1e-12)

    # --categories puts the LLM-only label back on purpose: then it is irrCAC with that set
    given = [*used, llm_only]
    wide = _agreement(sqlite_url, panel, "--categories", ",".join(given))
    assert wide["categories"] == given
    assert wide["value"] == pytest.approx(_ac1(humans, given), abs=1e-12)
    assert wide["value"] != pytest.approx(_agreement(sqlite_url, panel)["value"], abs=1e-6)

    # with the LLMs the set grows to what they used too
    pooled = _agreement(sqlite_url, panel, "--with-judges", "all")
    assert llm_only in pooled["categories"]

    r = cli(
        "metrics", "agreement", "--dataset", panel, "--metric", "ac1", "--categories", used[0], db=sqlite_url
    )
    assert r.code == 2 and "is used but not one of the categories" in r.stderr
