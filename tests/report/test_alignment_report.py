"""`report --alignment NAME`: the stored comparison as forest plots, the choices and the template
diff, in HTML and Markdown; refused (exit 2, one line) while the alignment is not compared."""

from __future__ import annotations

from pathlib import Path

from tests.align.conftest import ok, run_args
from tests.helpers import cli
from tests.repair.conftest import prepare_db


def test_alignment_section_in_html_and_markdown(sqlite_url: str, tmp_path: Path) -> None:
    prepare_db(sqlite_url)
    out = ok(*run_args("few", "fewshot", "--k", "3"), db=sqlite_url)
    examples = out["choices"]["examples"]["items"]
    page = tmp_path / "r.html"
    r = cli("report", "--alignment", "few", "--out", str(page), "--json", db=sqlite_url).json()
    assert r["sections"] == ["alignment"] and r["plots"] == 2 and r["simulated"] is True
    text = page.read_text(encoding="utf-8")
    assert text.count("data-plot='forest'") == 2 and "Template diff" in text
    assert all(e in text for e in examples) and "simulated" in text
    md = tmp_path / "r.md"
    r = cli(
        "report", "--alignment", "few", "--format", "md", "--out", str(md), "--json", db=sqlite_url
    ).json()
    body = md.read_text(encoding="utf-8")
    assert (
        "## Alignment: few" in body and "```diff" in body and "| original |" in body and "| aligned |" in body
    )
    assert all("human score" in body and e in body for e in examples)
    ok(*run_args("part", "fewshot", "--stop-after", "dev"), db=sqlite_url)
    bad = cli("report", "--alignment", "part", "--out", str(tmp_path / "p.html"), db=sqlite_url)
    assert bad.code == 2 and bad.stderr.count("\n") == 1 and "not compared" in bad.stderr
    assert not (tmp_path / "p.html").exists()
