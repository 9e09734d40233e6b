"""What every study row keeps the same way (`store/study.py`), through both kinds of study that use
it — an alignment and a repair iteration — on a real SQLite file and a real PostgreSQL database:
finding by name, a start with the same inputs finding the row and other inputs refused with the row
untouched, a step recorded with what it produced (campaigns added to the ones the study has), steps
re-opened, and the stopping rule leaving done steps done."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from judgepanel.errors import BadInput, NotFound
from judgepanel.store import align as align_store
from judgepanel.store import repair as repair_store
from judgepanel.store.engine import make_engine
from tests.repair.conftest import prepare_db

pytestmark = pytest.mark.xdist_group("study_rows")


def _align(engine: Engine, name: str, inputs: dict[str, object]) -> align_store.AlignmentRecord:
    return align_store.start_alignment(
        engine,
        name,
        dataset="se",
        method="fewshot",
        inputs=inputs,
        campaigns={"dev-original": f"{name}-dev-original"},
    )


def test_study_rows_start_record_reopen_and_stop_alike(db_url: str) -> None:
    prepare_db(db_url)
    engine = make_engine(db_url)
    try:
        with pytest.raises(NotFound, match=r"no alignment named 'a1' \(known: none\)"):
            align_store.get_alignment(engine, "a1")
        first = _align(engine, "a1", {"k": 4})
        assert first.steps == dict.fromkeys(align_store.STEPS, "pending") and first.dataset == "se"
        assert _align(engine, "a1", {"k": 4}) == first  # the same command again finds the same row
        with pytest.raises(
            BadInput,
            match=r"^alignment 'a1' exists with other inputs; resume it with `judgepanel align run a1` alone",
        ):
            _align(engine, "a1", {"k": 5})
        with engine.connect() as c:
            assert c.execute(text("SELECT count(*) FROM alignment")).scalar_one() == 1
        assert align_store.get_alignment(engine, "a1").inputs == {"k": 4}

        # a step recorded with what it produced; its campaigns add to the study's
        done = align_store.finish_step(engine, "a1", "dev", campaigns={"dev-aligned": "a1-dev-aligned"})
        assert done.steps == {"dev": "done", "align": "pending", "evaluate": "pending", "compare": "pending"}
        assert done.campaigns == {"dev-original": "a1-dev-original", "dev-aligned": "a1-dev-aligned"}
        align_store.finish_step(engine, "a1", "evaluate")
        align_store.finish_step(engine, "a1", "compare", comparison={"delta": 0.1})
        again = align_store.reopen_steps(engine, "a1", ["evaluate", "compare"])
        assert again.steps == {"dev": "done", "align": "pending", "evaluate": "pending", "compare": "pending"}
        assert again.comparison is None
        with pytest.raises(BadInput, match="unknown alignment step"):
            align_store.finish_step(engine, "a1", "nothing")

        # a repair iteration: the same rules, its own noun and command
        with pytest.raises(NotFound, match=r"no repair iteration named 'r1' \(known: none\)"):
            repair_store.get_iteration(engine, "r1")

        def start(inputs: dict[str, int]) -> repair_store.IterationRecord:
            return repair_store.start_iteration(
                engine,
                "r1",
                dataset="se",
                rubric="summeval@1",
                inputs=inputs,
                control_seed=7,
                criterion=None,
                campaigns={"dev": "r1-dev"},
            )

        it = start({"x": 1})
        assert it.steps == dict.fromkeys(repair_store.STEPS, "pending")
        with pytest.raises(
            BadInput,
            match=r"^repair iteration 'r1' exists with other inputs; resume it with `judgepanel repair run r1`",
        ):
            start({"x": 2})
        repair_store.finish_step(engine, "r1", "dev")
        repair_store.finish_step(engine, "r1", "select", selection={"rates": {}})
        stopped = repair_store.stop_iteration(engine, "r1", "nothing left")
        assert stopped.steps == {
            "dev": "done",
            "select": "done",
            "rewrite": "stopped",
            "evaluate": "stopped",
            "compare": "stopped",
        }
        assert stopped.selection == {"rates": {}, "stopped": "nothing left"}
        assert stopped.campaigns == {"dev": "r1-dev"}
        with pytest.raises(NotFound, match=r"known: r1\)"):
            repair_store.get_iteration(engine, "r2")
    finally:
        engine.dispose()
