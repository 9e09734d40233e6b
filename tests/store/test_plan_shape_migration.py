"""Migration 0009_plan_shape on SQLite and PostgreSQL: one step down drops the job's stored prompt
figures and keeps its jobs and their requests (SQLite's batch mode would re-create `job`, and the
DROP of the old table cascade to every request); up again brings the columns back, NULL (plan then
renders, as before)."""

from __future__ import annotations

from sqlalchemy import inspect, text

from judgepanel.store import migrate
from judgepanel.store.engine import make_engine
from judgepanel.store.models import Job
from tests.helpers import load_summeval_sample

SHAPE = {"prompt_chars", "prompt_messages", "prompt_prefix_tokens", "prompt_sig"}


def test_plan_shape_revision_down_and_up(db_url: str) -> None:
    load_summeval_sample(db_url)
    eng = make_engine(db_url)
    assert migrate.current_revision(eng) == migrate.head_revision(eng)
    assert {c["name"] for c in inspect(eng).get_columns("job")} == {c.name for c in Job.__table__.columns}
    with eng.begin() as c:
        c.execute(
            text("INSERT INTO judge (name, provider, model, params) VALUES ('sim:a', 'sim', 'a', '{}');")
        )
        c.execute(
            text(
                "INSERT INTO campaign (name, dataset_id, protocol, repeats, status, spec, created_at) "
                "SELECT 'c', id, 'pointwise', 1, 'planned', '{}', CURRENT_TIMESTAMP FROM dataset"
            )
        )
        c.execute(
            text(
                "INSERT INTO job (campaign_id, job_key, judge_id, repeat, status, attempts, updated_at, "
                "prompt_chars, prompt_messages, prompt_prefix_tokens, prompt_sig) "
                "SELECT campaign.id, 'k', judge.id, 0, 'pending', 0, CURRENT_TIMESTAMP, 10, 2, 0, 'abc' "
                "FROM campaign, judge"
            )
        )
        c.execute(
            text(
                "INSERT INTO request (job_id, attempt, request_hash, template_name, template_hash, messages, "
                "params, created_at) SELECT id, 1, 'h', 't', 'th', '[]', '{}', CURRENT_TIMESTAMP FROM job"
            )
        )
    migrate.downgrade(eng, "0008_align")
    assert migrate.current_revision(eng) == "0008_align"
    assert not SHAPE & {c["name"] for c in inspect(eng).get_columns("job")}
    with eng.connect() as c:
        assert c.execute(text("SELECT count(*) FROM job")).scalar_one() == 1
        assert c.execute(text("SELECT count(*) FROM request")).scalar_one() == 1
    migrate.upgrade(eng)
    with eng.connect() as c:
        row = c.execute(
            text("SELECT prompt_chars, prompt_messages, prompt_prefix_tokens, prompt_sig FROM job")
        ).one()
    assert tuple(row) == (None, None, None, None)
    assert migrate.drift(eng) == []
    eng.dispose()
