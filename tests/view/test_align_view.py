"""The viewer's alignment pages (`/align`, `/align/NAME`) and their JSON twins agree with
`align status --json` / `align compare --json` and show the forest plots."""

from __future__ import annotations

from starlette.testclient import TestClient

from judgepanel.store.readonly import read_only_engine
from judgepanel.view.app import create_app
from tests.align.conftest import ok, run_args
from tests.helpers import cli
from tests.repair.conftest import prepare_db


def test_alignment_pages_and_twins(sqlite_url: str) -> None:
    prepare_db(sqlite_url)
    ok(*run_args("few", "fewshot", "--k", "3"), db=sqlite_url)
    ok(*run_args("part", "grid", "--grid-judge", "sim:judge-b", "--stop-after", "dev"), db=sqlite_url)
    status = cli("align", "status", "few", "--json", db=sqlite_url).json()
    compared = cli("align", "compare", "few", "--json", db=sqlite_url).json()
    eng = read_only_engine(sqlite_url)
    try:
        with TestClient(create_app(eng, n_boot=50), base_url="http://127.0.0.1") as client:
            listed = client.get("/api/align").json()
            assert [r["alignment"] for r in listed["alignments"]] == ["few", "part"] and listed[
                "simulated"
            ] is True
            mine = client.get("/api/align/few").json()
            assert {k: mine[k] for k in status if k != "simulated"} == {
                k: v for k, v in status.items() if k != "simulated"
            }
            assert {k: mine[k] for k in compared} == compared  # one copy, at the top level
            assert "comparison" not in mine and mine["compared"] is True
            not_yet = client.get("/api/align/part").json()
            assert not_yet["compared"] is False and "comparison" not in not_yet and "delta" not in not_yet
            page = client.get("/align/few").text
            assert page.count("data-plot='forest'") == 2 and "Template diff" in page and "simulated" in page
            assert "Not compared yet" in client.get("/align/part").text
            assert client.get("/api/align/nope").status_code == 404
            assert 'href="/align"' in client.get("/align").text
    finally:
        eng.dispose()
