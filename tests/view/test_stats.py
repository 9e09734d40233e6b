"""The campaign page's figures (issue 33 §3, §4): computed once per change of what they rest on,
never stale after a new verdict, a new label or a campaign created again under an id SQLite hands
out twice, saying when they were computed; the answer distributions beside the humans'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from judgepanel.demo import PAIRWISE, POINTWISE
from judgepanel.protocol.pairs import combine_orders
from judgepanel.store.readonly import read_only_engine
from judgepanel.view.app import create_app
from tests.helpers import copy_db


def _exec(url: str, sql: str, **params: object) -> list[tuple[object, ...]]:
    eng = create_engine(url)
    with eng.begin() as conn:
        res = conn.execute(text(sql), params)
        rows = [tuple(r) for r in res] if res.returns_rows else []
    eng.dispose()
    return rows


def test_figures_are_cached_until_the_results_change(demo_url: str, tmp_path: Path) -> None:
    url = copy_db(Path(demo_url.removeprefix("sqlite:///")), tmp_path, "stats.db")
    eng = read_only_engine(url)
    with TestClient(create_app(eng, n_boot=20), base_url="http://127.0.0.1") as c:
        first = c.get(f"/api/campaigns/{POINTWISE}").json()
        again = c.get(f"/api/campaigns/{POINTWISE}").json()
        assert first["computed"]["cached"] is False and again["computed"]["cached"] is True
        assert again["agreement"] == first["agreement"] and again["computed"]["at"] == first["computed"]["at"]
        assert (
            first["computed"]["verdicts"]
            == _exec(
                url,
                "SELECT count(*) FROM verdict v JOIN job j ON j.id = v.job_id JOIN campaign c ON c.id = j.campaign_id "
                "WHERE c.name = :c",
                c=POINTWISE,
            )[0][0]
        )
        assert "Figures computed" in c.get(f"/campaigns/{POINTWISE}").text
        # a judge's verdicts all changed to 1: the figures follow at once
        _exec(
            url,
            "UPDATE verdict SET score = 1, value_canonical = '1' WHERE id IN (SELECT v.id FROM verdict v "
            "JOIN job j ON j.id = v.job_id JOIN campaign c ON c.id = j.campaign_id WHERE c.name = :c)",
            c=POINTWISE,
        )
        _exec(  # and one more verdict row deleted (what a re-run or delete changes)
            url,
            "DELETE FROM verdict WHERE id = (SELECT max(v.id) FROM verdict v JOIN job j ON j.id = v.job_id "
            "JOIN campaign c ON c.id = j.campaign_id WHERE c.name = :c)",
            c=POINTWISE,
        )
        changed = c.get(f"/api/campaigns/{POINTWISE}").json()
        assert changed["computed"]["cached"] is False
        assert changed["computed"]["verdicts"] == first["computed"]["verdicts"] - 1
        judged = [d for d in changed["distributions"] if d["kind"] == "judge"]
        assert judged and all(set(d["counts"]) >= {"1"} and d["counts"]["1"] == d["total"] for d in judged)
        # a new human label on one of its items
        _exec(
            url,
            "INSERT INTO label (item_id, annotator_id, dimension, value_num, value_text) SELECT l.item_id, "
            "l.annotator_id, l.dimension || '-x', l.value_num, l.value_text FROM label l "
            "JOIN annotator a ON a.id = l.annotator_id WHERE a.kind = 'human' LIMIT 1",
        )
        assert c.get(f"/api/campaigns/{POINTWISE}").json()["computed"]["cached"] is False
        # the campaign deleted and created again with the same id and the same rows: its creation
        # time tells them apart (issue 28 §3: SQLite reuses a deleted row's id)
        _exec(url, "UPDATE campaign SET created_at = '2031-01-01 00:00:00' WHERE name = :c", c=POINTWISE)
        assert c.get(f"/api/campaigns/{POINTWISE}").json()["computed"]["cached"] is False
        assert c.get(f"/api/campaigns/{POINTWISE}").json()["computed"]["cached"] is True
    eng.dispose()


def test_distributions_count_what_each_rater_answered(demo_url: str) -> None:
    eng = read_only_engine(demo_url)
    with TestClient(create_app(eng, n_boot=20), base_url="http://127.0.0.1") as c:
        page = c.get(f"/api/campaigns/{PAIRWISE}").json()
        html = c.get(f"/campaigns/{PAIRWISE}").text
    eng.dispose()
    rows = _exec(
        demo_url,
        'SELECT g.name, j.pair_id, j."order", v.value_canonical FROM verdict v JOIN job j ON j.id = v.job_id '
        "JOIN judge g ON g.id = j.judge_id JOIN campaign c ON c.id = j.campaign_id "
        "WHERE c.name = :c AND v.parse_status = 'ok' ORDER BY j.id, v.id",
        c=PAIRWISE,
    )
    by: dict[tuple[object, object], dict[object, object]] = {}
    for judge, pair, order, value in rows:
        by.setdefault((judge, pair), {})[order] = value
    want: dict[object, dict[str, int]] = {}
    for (judge, _), o in by.items():
        if "AB" in o and "BA" in o:
            v = combine_orders(str(o["AB"]), str(o["BA"]))
            want.setdefault(judge, {"A": 0, "B": 0, "T": 0, "inconsistent": 0})[v] += 1
    got = {d["rater"]: d["counts"] for d in page["distributions"] if d["kind"] == "judge"}
    assert got == want and any(w["inconsistent"] for w in want.values())
    humans = _exec(
        demo_url,
        "SELECT pl.value, count(*) FROM pair_label pl JOIN annotator a ON a.id = pl.annotator_id "
        "WHERE a.kind = 'human' AND pl.pair_id IN (SELECT j.pair_id FROM job j JOIN campaign c "
        "ON c.id = j.campaign_id WHERE c.name = :c) GROUP BY pl.value",
        c=PAIRWISE,
    )
    first = page["distributions"][0]
    assert first["kind"] == "human" and {k: v for k, v in first["counts"].items() if v} == dict(humans)
    assert 'data-plot="distribution"' in html and "<title>" in html.split('data-plot="distribution"')[1]


def test_repair_sub_campaigns_are_listed_under_their_iteration(demo_url: str) -> None:
    eng = read_only_engine(demo_url)
    with TestClient(create_app(eng, n_boot=20), base_url="http://127.0.0.1") as c:
        d = c.get("/api/campaigns").json()
        html = c.get("/").text
    eng.dispose()
    (it_name, camps_json) = _exec(demo_url, "SELECT name, campaigns FROM repair_iteration")[0]
    camps = json.loads(str(camps_json))
    (group,) = d["groups"]
    assert group["kind"] == "repair" and group["name"] == it_name
    assert set(group["campaigns"]) == set(camps.values())
    for row in d["campaigns"]:
        want = next(
            ({"kind": "repair", "name": it_name, "role": r} for r, n in camps.items() if n == row["name"]),
            None,
        )
        assert row["part_of"] == want, row["name"]
    # on the page: the campaigns of their own first, then the iteration's header and its campaigns
    body = html.split('id="campaigns"', 1)[1]
    header = body.index(f'data-group="{it_name}"')
    assert body.index(f'data-campaign="{PAIRWISE}"') < header
    assert all(body.index(f'data-campaign="{n}"') > header for n in camps.values())
    assert body.count('class="sub"') == len(camps)


def test_a_queue_label_edited_in_place_is_never_a_stale_figure(demo_url: str, tmp_path: Path) -> None:
    """An annotation queue's edit updates its `label` row in place (same id, same count) and adds
    an `annotation_event`: the campaign page's key follows the event, so the figures are computed
    again and the humans' distribution shows the new value."""
    from judgepanel.annotate.queues import CreateOptions, create, invite
    from judgepanel.store import annotation as ann
    from judgepanel.store.engine import make_engine

    url = copy_db(Path(demo_url.removeprefix("sqlite:///")), tmp_path, "edit.db")
    ((dataset, dimension),) = _exec(
        url,
        "SELECT d.name, j.dimension FROM campaign c JOIN dataset d ON d.id = c.dataset_id "
        "JOIN job j ON j.campaign_id = c.id WHERE c.name = :c LIMIT 1",
        c=POINTWISE,
    )
    writer = make_engine(url)
    create(
        writer, CreateOptions(name="qq", dataset=str(dataset), dimension=str(dimension), items=3, per_item=1)
    )
    token = invite(writer, "qq", "ann", "http://127.0.0.1:1")["token"]
    m = ann.member_by_token(writer, "qq", ann.token_hash(token))
    slot = ann.next_slot(writer, m)
    assert slot is not None
    ann.submit(writer, m, slot, value=1)
    eng = read_only_engine(url)

    def humans(page: dict[str, Any]) -> dict[str, int]:
        got = [d for d in page["distributions"] if d["kind"] == "human"]
        assert len(got) == 1, page["distributions"]
        return {k: int(v) for k, v in got[0]["counts"].items()}

    with TestClient(create_app(eng, n_boot=20), base_url="http://127.0.0.1") as c:
        first = c.get(f"/api/campaigns/{POINTWISE}").json()
        assert c.get(f"/api/campaigns/{POINTWISE}").json()["computed"]["cached"] is True
        ann.submit(writer, m, slot, value=5)  # the same label row, edited
        edited = c.get(f"/api/campaigns/{POINTWISE}").json()
        assert edited["computed"]["cached"] is False
        before, after = humans(first), humans(edited)
        assert after["1"] == before["1"] - 1 and after["5"] == before.get("5", 0) + 1
    eng.dispose()
    writer.dispose()
