"""Direct pairwise votes (MT-Bench's human judgments): items, annotators and a pair set with each
annotator's A/B/T vote as its pair label, written in one transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, insert, select
from sqlalchemy.exc import IntegrityError

from judgepanel.datasets.mtbench import ParsedMTBench
from judgepanel.errors import BadInput
from judgepanel.store.engine import session_scope
from judgepanel.store.imports import _import
from judgepanel.store.models import Annotator, Dataset, Item, Pair, PairLabel, PairSet, table_of


@dataclass(frozen=True)
class VotesImport:
    dataset: str
    pairs: str
    unchanged: bool
    items: int
    annotators: int
    pair_count: int
    votes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "pairs": self.pairs,
            "unchanged": self.unchanged,
            "items": self.items,
            "annotators": self.annotators,
            "pair_count": self.pair_count,
            "votes": self.votes,
        }


def import_votes(
    engine: Engine, name: str, pairs: str, parsed: ParsedMTBench, *, replace: bool = False
) -> VotesImport:
    if not name.strip() or not pairs.strip():
        raise BadInput("dataset and pair set names must not be empty")
    keys: list[tuple[str, str]] = []
    for v in parsed.votes:
        if (v.item_a, v.item_b) not in keys:
            keys.append((v.item_a, v.item_b))
    try:
        with session_scope(engine) as s:
            result = _import(s, name, parsed.dataset, replace)
            ds = s.scalar(select(Dataset).where(Dataset.name == name))
            assert ds is not None
            prev = s.scalar(select(PairSet).where(PairSet.name == pairs))
            if prev is not None:
                if result.unchanged and prev.dataset_id == ds.id:
                    return VotesImport(
                        name, pairs, True, 0, result.annotators, prev.pairs_total, len(parsed.votes)
                    )
                raise BadInput(f"pair set {pairs!r} already exists; choose another name with --pairs")
            ds_id = ds.id
            item_ids = dict(
                s.execute(select(Item.external_id, Item.id).where(Item.dataset_id == ds_id)).all()
            )
            ann_ids = dict(
                s.execute(select(Annotator.name, Annotator.id).where(Annotator.dataset_id == ds_id)).all()
            )
            ps = PairSet(
                name=pairs, dataset_id=ds_id, seed=0, sample=None, tie_eps=0.0, pairs_total=len(keys)
            )
            s.add(ps)
            s.flush()
            s.execute(
                insert(table_of(Pair)),
                [
                    {"pair_set_id": ps.id, "position": i, "item_a_id": item_ids[a], "item_b_id": item_ids[b]}
                    for i, (a, b) in enumerate(keys)
                ],
            )
            pair_ids = {
                (a, b): pid
                for pid, a, b in s.execute(
                    select(Pair.id, Pair.item_a_id, Pair.item_b_id).where(Pair.pair_set_id == ps.id)
                ).all()
            }
            s.execute(
                insert(table_of(PairLabel)),
                [
                    {
                        "pair_id": pair_ids[(item_ids[v.item_a], item_ids[v.item_b])],
                        "annotator_id": ann_ids[v.annotator],
                        "value": v.value,
                    }
                    for v in parsed.votes
                ],
            )
            return VotesImport(
                name, pairs, False, result.items_added, result.annotators, len(keys), len(parsed.votes)
            )
    except IntegrityError as exc:
        raise BadInput(
            f"cannot import {name!r}: it conflicts with stored rows ({exc.orig.__class__.__name__})"
        ) from exc


@dataclass(frozen=True)
class VoteTables:
    """A pair set's votes as `metrics.votes` reads them: voter -> {pair id: A|B|T}, and each pair's turn."""

    pairs: str
    humans: dict[str, dict[int, str]]
    # imported LLM votes ("name (imported)") and campaign judges ("NAME@CAMPAIGN", the judge's
    # short name, issue 19 §3)
    judges: dict[str, dict[int, str]]
    turns: dict[int, str]  # pair id -> turn ("1", "2"; "" where the items name none)
    # voter label -> the campaign judge's full spec (None for imported votes)
    specs: dict[str, str | None] = field(default_factory=dict)


def vote_tables(engine: Engine, pairs: str, campaigns: list[str]) -> VoteTables:
    """Human votes, imported LLM votes and campaign judges' combined AB/BA verdicts on a pair set."""
    from collections import defaultdict

    from judgepanel.protocol.pairs import as_label, combine_orders
    from judgepanel.store.campaigns.readers import done_verdicts, judge_names_in
    from judgepanel.store.models import Campaign, Job, Judge, Verdict
    from judgepanel.store.queries import pair_set_by_name

    with session_scope(engine) as s:
        ps = pair_set_by_name(s, pairs)
        humans: dict[str, dict[int, str]] = defaultdict(dict)
        judges: dict[str, dict[int, str]] = {}
        specs: dict[str, str | None] = {}
        turns: dict[int, str] = {}
        for pid, ext in s.execute(
            select(Pair.id, Item.external_id)
            .join(Item, Item.id == Pair.item_a_id)
            .where(Pair.pair_set_id == ps.id)
        ):
            # MT-Bench items are `<question>__<model>__<turn>` (datasets.mtbench.item_id)
            last = str(ext).rsplit("__", 1)
            turns[int(pid)] = last[1] if len(last) == 2 and last[1].isdigit() else ""
        for ann, kind, pid, value in s.execute(
            select(Annotator.name, Annotator.kind, PairLabel.pair_id, PairLabel.value)
            .join(Annotator, Annotator.id == PairLabel.annotator_id)
            .join(Pair, Pair.id == PairLabel.pair_id)
            .where(Pair.pair_set_id == ps.id)
        ):
            if kind == "human":
                humans[ann][int(pid)] = value
            else:  # imported LLM votes: judges whose verdicts were produced elsewhere
                judges.setdefault(f"{ann} (imported)", {})[int(pid)] = value
        for cname in campaigns:
            c = s.scalar(select(Campaign).where(Campaign.name == cname))
            if c is None:
                raise BadInput(f"no campaign named {cname!r}")
            if c.protocol != "pairwise" or c.pair_set_id != ps.id:
                raise BadInput(f"campaign {cname!r} is not a pairwise campaign on pair set {pairs!r}")
            orders: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
            for jname, jpid, order, verdict in s.execute(
                done_verdicts(
                    c.id, Judge.name, Job.pair_id, Job.order, Verdict.value_canonical, accepted=True
                )
            ):
                if jpid is not None and order and verdict:
                    orders[(jname, int(jpid))][order] = verdict
            shown = judge_names_in(s, c)
            for (jname, pid), o in orders.items():
                label = as_label(combine_orders(o.get("AB"), o.get("BA")))
                if label is not None:
                    voter = f"{shown.get(jname, jname)}@{cname}"
                    judges.setdefault(voter, {})[pid] = label
                    specs[voter] = jname
    specs.update({v: None for v in judges if v not in specs})
    return VoteTables(pairs, dict(humans), judges, turns, specs)
