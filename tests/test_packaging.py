"""The wheel carries migrations, prompts, rubrics and the demo sample, so an installed judgepanel
works from any folder, not only from a checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (whl,) = out.glob("judgepanel-*.whl")
    return whl


def test_wheel_contains_the_data_folders(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("migrations", "prompts", "rubrics"):
        src = sorted(
            p.relative_to(REPO / folder).as_posix()
            for p in (REPO / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        )
        assert src, folder
        for rel in src:
            assert f"judgepanel/_bundled/{folder}/{rel}" in names
    assert "judgepanel/datasets/samples/summeval_sample.jsonl.gz" in names


def test_installed_wheel_runs_from_another_folder(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("JUDGEPANEL_DB", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "judgepanel", *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    where = subprocess.run(
        [sys.executable, "-c", "import judgepanel; print(judgepanel.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(site))
    r = run("db", "upgrade")
    assert r.returncode == 0, r.stderr
    assert (work / "judgepanel.db").exists()
    r = run("demo", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["db"] == "sqlite:///judgepanel.db"
