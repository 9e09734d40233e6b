"""Issue 28 §3: a running viewer showed $0.0205 spent on a new campaign with 0 calls. SQLite had
given the new campaign the deleted campaign's id, and the viewer's incremental spend was keyed by
the id alone. Now ids are never reused (AUTOINCREMENT) and the spend is keyed by id and creation
time, so neither a delete-and-create nor a row that does get an old id (a restored copy, an
explicit insert) can inherit another campaign's money."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from sqlalchemy import select, text

from judgepanel.store.models import Campaign
from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db
from tests.view.conftest import Viewer

PRICED = "sim:a?price_in=500&price_out=500"  # a simulated judge priced by hand: real-looking money


def _campaigns(viewer: Viewer) -> dict[str, dict[str, object]]:
    with urllib.request.urlopen(f"{viewer.url}/api/campaigns", timeout=30) as r:
        return {c["name"]: c for c in json.loads(r.read())["campaigns"]}


def test_a_new_campaign_never_shows_a_deleted_ones_spend(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    eng = tiny_db(url, n_groups=1, per_group=3)
    assert cli(*create_argv("first", PRICED), db=url).code == 0
    assert cli("campaign", "run", "first", db=url).code == 0
    viewer = Viewer(url)
    try:
        spent = _campaigns(viewer)["first"]["cost_usd"]
        assert isinstance(spent, float) and spent > 0.001
        with eng.connect() as c:
            first_id = c.scalar(select(Campaign.id).where(Campaign.name == "first"))

        assert cli("campaign", "delete", "first", db=url).code == 0
        assert cli(*create_argv("second", "sim:b"), db=url).code == 0
        shown = _campaigns(viewer)
        assert list(shown) == ["second"]
        assert shown["second"]["cost_usd"] == 0.0, shown["second"]  # 0 calls, $0 — not the deleted spend

        # a campaign row that does carry the deleted id (restored from a copy, inserted by hand)
        with eng.begin() as c:
            c.execute(
                text(
                    "INSERT INTO campaign (id, name, dataset_id, protocol, repeats, status, spec, created_at) "
                    "SELECT :i, 'third', id, 'pointwise', 1, 'planned', '{}', CURRENT_TIMESTAMP FROM dataset"
                ),
                {"i": first_id},
            )
        assert _campaigns(viewer)["third"]["cost_usd"] == 0.0
    finally:
        viewer.stop()
        eng.dispose()
