"""The results database's tables, each declared once, in SQLAlchemy Core (issues 20 and 31).

This is the one definition of the schema: a column is added in one place, here (`doc=` is its line
in `judgepanel query --schema`). `store.models` maps its ORM classes onto these very `Table`
objects (`__table__`), and the migrations are checked against this `metadata`
(`tests/store/test_tables.py`, `store.migrate.drift`).

Importing `sqlalchemy.orm` and mapping the models costs about 0.45 s of CPU at every start; the
commands that only read (`campaign list`, `campaign status`, `metrics agreement` and the readers
they use) select from these tables through `Columns` and never load the ORM.

The tables live in one module per concern, imported in this order (which is the order of
`metadata.tables`, of `query --schema` and of the schema reference in docs/database.md):
`data` (datasets, items, labels, pairs, rubrics), `campaigns` (judges, jobs, requests, replies,
verdicts), `studies` (rubric repair, alignment, re-annotation planning) and `scale` (shared rate
buckets, budget holds, provider batches).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Table

# The order of these imports is the order of `metadata.tables` (see above): not sorted.
from judgepanel.store.tables.base import NAMING, metadata, utcnow

# isort: split
from judgepanel.store.tables.data import (
    annotator,
    clause,
    dataset,
    item,
    label,
    pair,
    pair_label,
    pair_set,
    rubric,
    rubric_version,
)

# isort: split
from judgepanel.store.tables.campaigns import (
    campaign,
    campaign_judge,
    clause_verdict,
    job,
    judge,
    request,
    response,
    verdict,
)

# isort: split
from judgepanel.store.tables.studies import (
    alignment,
    allocation,
    allocation_item,
    clause_checker,
    repair_iteration,
)

# isort: split
from judgepanel.store.tables.scale import (
    budget_hold,
    provider_batch,
    provider_batch_job,
    rate_bucket,
    request_claim,
)


def _never_reuse_ids() -> None:
    """`id INTEGER PRIMARY KEY AUTOINCREMENT` on SQLite for every table keyed by an integer `id`
    (migration 0013_trust, issue 28 §3): a deleted row's id is never handed to a new one, so
    nothing that remembered an id (a running viewer's cache, a script) can take a new campaign for
    a deleted one. PostgreSQL's sequences never reuse ids anyway."""
    from sqlalchemy import Integer

    for t in metadata.tables.values():
        pk = list(t.primary_key.columns)
        if len(pk) == 1 and pk[0].name == "id" and isinstance(pk[0].type, Integer):
            t.dialect_options["sqlite"]["autoincrement"] = True


_never_reuse_ids()

__all__ = [
    "NAMING",
    "Annotator",
    "BudgetHold",
    "Campaign",
    "CampaignJudge",
    "ClauseVerdict",
    "Columns",
    "Dataset",
    "Item",
    "Job",
    "Judge",
    "Label",
    "Pair",
    "PairLabel",
    "PairSet",
    "ProviderBatchJob",
    "Request",
    "RequestClaim",
    "Response",
    "Verdict",
    "alignment",
    "allocation",
    "allocation_item",
    "annotator",
    "budget_hold",
    "campaign",
    "campaign_judge",
    "clause",
    "clause_checker",
    "clause_verdict",
    "dataset",
    "item",
    "job",
    "judge",
    "label",
    "metadata",
    "pair",
    "pair_label",
    "pair_set",
    "provider_batch",
    "provider_batch_job",
    "rate_bucket",
    "repair_iteration",
    "request",
    "request_claim",
    "response",
    "rubric",
    "rubric_version",
    "utcnow",
    "verdict",
]


class Columns:
    """A table whose columns read as attributes (`Job.status`), usable where a query names the table
    (`select_from(Job)`, `.join(Judge, …)`): Core queries over `store.tables` keep the shape of the
    ORM queries they replace, without loading the ORM."""

    def __init__(self, table: Table) -> None:
        self.__table__ = table

    def __getattr__(self, name: str) -> Column[Any]:
        try:
            return self.__table__.c[name]
        except KeyError:
            raise AttributeError(f"table {self.__table__.name} has no column {name!r}") from None

    def __clause_element__(self) -> Any:  # the table (typed Any: SQLAlchemy's protocol wants an expression)
        return self.__table__


BudgetHold = Columns(budget_hold)
Campaign = Columns(campaign)
CampaignJudge = Columns(campaign_judge)
ClauseVerdict = Columns(clause_verdict)
Dataset = Columns(dataset)
Item = Columns(item)
Job = Columns(job)
Judge = Columns(judge)
Label = Columns(label)
Annotator = Columns(annotator)
Pair = Columns(pair)
PairLabel = Columns(pair_label)
PairSet = Columns(pair_set)
ProviderBatchJob = Columns(provider_batch_job)
Request = Columns(request)
RequestClaim = Columns(request_claim)
Response = Columns(response)
Verdict = Columns(verdict)
