"""`metrics bias --campaign` over a stored campaign, and judges as rating-matrix columns."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import Engine, select

from judgepanel.metrics.bias import position_bias
from judgepanel.protocol.pairs import as_label, combine_orders
from judgepanel.runner import campaign as api
from judgepanel.runner.executor import RunOptions
from judgepanel.store.matrices import pair_matrix
from judgepanel.store.models import Job, Judge, Verdict
from tests.helpers import cli
from tests.runner.conftest import DATASET, PAIRS, load_tiny


def test_bias_command_and_rater_columns(engine: Engine) -> None:
    load_tiny(engine, n_groups=6, per_group=6)
    judges = ["sim:fair?noise=0.05", "sim:leaning?position_bias=0.6&noise=0.05"]
    api.create(engine, "bias", dataset=DATASET, protocol="pairwise", pairs=PAIRS, judges=judges)
    api.run(engine, "bias", RunOptions(flush_ms=10))
    url = engine.url.render_as_string(hide_password=False)
    out = cli("metrics", "bias", "--campaign", "bias", "--json", db=url).json()
    assert set(out["judges"]) == {"sim:fair?noise=0.05", "sim:leaning?noise=0.05&position_bias=0.6"}
    # independently: pair up the stored presented verdicts and count by hand
    with engine.connect() as conn:
        rows = conn.execute(
            select(Judge.name, Job.pair_id, Job.order, Verdict.value_presented, Verdict.value_canonical)
            .join(Judge, Judge.id == Job.judge_id)
            .join(Verdict, Verdict.job_id == Job.id)
        ).all()
    pairs: dict[str, dict[int, dict[str, tuple[str, str]]]] = defaultdict(lambda: defaultdict(dict))
    for name, pid, order, shown, canon in rows:
        pairs[name][pid][order] = (shown, canon)
    for name, by_pair in pairs.items():
        got = out["judges"][name]
        back = sum(1 for o in by_pair.values() if o["AB"][0] == o["BA"][0] == "B")
        front = sum(1 for o in by_pair.values() if o["AB"][0] == o["BA"][0] == "A")
        assert (got["back_wins"], got["front_wins"], got["inconsistent"]) == (back, front, back + front)
        ref = position_bias([o["AB"][0] for o in by_pair.values()], [o["BA"][0] for o in by_pair.values()])
        assert got["p_value"] == ref.p_value and got["consistent"] == ref.consistent
    leaning = out["judges"]["sim:leaning?noise=0.05&position_bias=0.6"]
    assert leaning["back_wins"] > 3 * max(leaning["front_wins"], 1) and leaning["p_value"] < 0.01
    # judges join the humans' pair matrix as A/B/T columns of their combined AB/BA verdicts
    m = pair_matrix(engine, PAIRS, with_judges=["all"])  # no humans on the tiny set
    col = "sim:fair?noise=0.05@bias"
    assert col in m.rater_names
    j = m.rater_names.index(col)
    labels = dict(zip(m.category_labels, m.categories, strict=True))
    for i, pid in enumerate(m.unit_ids):
        o = pairs["sim:fair?noise=0.05"][pid]
        expected = as_label(combine_orders(o["AB"][1], o["BA"][1]))
        assert m.values[i, j] == labels[expected]
