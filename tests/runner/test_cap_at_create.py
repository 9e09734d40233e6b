"""Issue 28 §5: a `--max-cost` that `campaign run` could not enforce (a judge without a known
price) is refused by `campaign create`, in one line, with nothing stored; flags and campaign files
alike."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.helpers import cli
from tests.runner.conftest import create_argv, tiny_db

UNPRICED = "openai:my-local-model?base_url=http://127.0.0.1:9/v1"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_create_refuses_a_cap_it_cannot_enforce(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    url = f"sqlite:///{db}"
    eng = tiny_db(url, n_groups=1, per_group=2)
    eng.dispose()
    before = _digest(db)

    out = cli(*create_argv("capped", UNPRICED, "sim:free", extra=("--max-cost", "1")), db=url)
    assert out.code == 2 and out.stderr.count("\n") == 1
    assert "--max-cost cannot be enforced: no price known for openai:my-local-model" in out.stderr
    assert "price_in=" in out.stderr
    assert _digest(db) == before

    f = tmp_path / "c.yaml"
    f.write_text(f"name: filed\ndataset: tiny\nprotocol: pointwise\njudges: ['{UNPRICED}']\nmax_cost: 2.5\n")
    out = cli("campaign", "create", "--from", str(f), db=url)
    assert out.code == 2 and "no price known" in out.stderr and out.stderr.count("\n") == 1
    assert _digest(db) == before

    # priced (or free) judges, and an unpriced one without a cap, are accepted as before
    assert cli(*create_argv("ok", UNPRICED), db=url).code == 0
    priced = UNPRICED + "&price_in=0.1&price_out=0.4"
    assert cli(*create_argv("ok2", priced, "sim:free", extra=("--max-cost", "1")), db=url).code == 0
