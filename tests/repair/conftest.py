"""A database with the bundled SummEval sample, split dev/eval by article, and the summeval rubric."""

from __future__ import annotations

from tests.helpers import cli, from_built, load_summeval_sample

PANEL_SIM = ("sim:judge-a", "sim:judge-b", "sim:judge-c")


def prepare_db(db: str) -> None:
    """A new SQLite file becomes a copy of the one database this prepared in the test run."""
    from_built(db, "summeval-sample-prepared", _prepare_db)


def _prepare_db(db: str) -> None:
    load_summeval_sample(db)
    assert (
        cli(
            "data", "split", "se", "--fractions", "dev=0.5,eval=0.5", "--seed", "1", "--by", "group", db=db
        ).code
        == 0
    )
    assert cli("rubric", "add", "summeval", db=db).code == 0


def prepare_db_five_eval(db: str) -> None:
    """As :func:`prepare_db`, split 3 development / 5 evaluation articles: the fewest evaluation
    groups for which a repair comparison states a verdict (issue 30 §1)."""
    from_built(db, "summeval-sample-prepared-3-5", _prepare_five_eval)


def _prepare_five_eval(db: str) -> None:
    load_summeval_sample(db)
    split = ["data", "split", "se", "--fractions", "dev=0.375,eval=0.625", "--seed", "1", "--by", "group"]
    assert cli(*split, db=db).code == 0
    assert cli("rubric", "add", "summeval", db=db).code == 0


def run_args(name: str, judges: tuple[str, ...], editor: str, *extra: str) -> list[str]:
    args = ["repair", "run", name, "--dataset", "se", "--rubric", "summeval", "--editor", editor]
    for j in judges:
        args += ["--judge", j]
    return [
        *args,
        "--dimension",
        "coherence",
        "--limit",
        "12",
        "--control-seed",
        "7",
        "--bootstrap",
        "200",
        *extra,
    ]
