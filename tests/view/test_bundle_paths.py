"""Where `view --bundle DIR` writes (issue 33 §5): a new or empty folder only, as `export` and
`report --out` never replace what they did not make; nothing written through a symlink or over a
file that appears while the pages are computed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from judgepanel.errors import BadInput
from judgepanel.store.engine import make_engine
from judgepanel.view import bundle
from tests.helpers import cli, migrate_db


@pytest.fixture
def url(sqlite_url: str) -> str:
    migrate_db(sqlite_url)
    return sqlite_url


def test_a_dangling_symlink_or_a_file_is_refused_in_one_line(url: str, tmp_path: Path) -> None:
    """A dangling symlink as DIR answered a traceback (exit 1) from `mkdir`."""
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    afile = tmp_path / "afile"
    afile.write_text("mine")
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.html").write_text("mine")
    for target in (dangling, afile, full, tmp_path / "link-to-full"):
        if target.name == "link-to-full":
            target.symlink_to(full)
        r = cli("view", "--bundle", str(target), db=url)
        assert r.code == 2 and "not an empty folder" in r.stderr, (target, r.stderr[-300:])
        assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "nowhere").exists() and afile.read_text() == "mine"
    assert sorted(p.name for p in full.iterdir()) == ["keep.html"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("view", "--bundle", str(empty), db=url).code == 0 and (empty / "index.html").exists()


def test_what_appears_while_the_pages_are_computed_is_never_written_over(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder was checked once, before computing every page (minutes for a large campaign),
    and then written with `write_text`: a symlink `index.html` planted meanwhile had its target
    overwritten."""
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours")
    folder = tmp_path / "b"
    folder.mkdir()
    init = bundle._Writer.__init__

    def plant(self: Any, *args: Any) -> None:
        (folder / "index.html").symlink_to(victim)
        init(self, *args)

    monkeypatch.setattr(bundle._Writer, "__init__", plant)
    eng = make_engine(url)
    try:
        with pytest.raises(BadInput, match="not an empty folder"):
            bundle.write_bundle(eng, folder)
    finally:
        eng.dispose()
    assert victim.read_text() == "not yours"
