"""`judgepanel demo`: the main job end to end on the embedded defaults, offline.

Each step is a plain library call, so the demo doubles as a worked example of the Python API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from judgepanel.datasets.summeval import parse_summeval
from judgepanel.resources import sample_path
from judgepanel.store import migrate
from judgepanel.store.imports import import_parsed
from judgepanel.store.queries import create_pair_set, find_duplicates

DATASET = "summeval-sample"
PAIRS = "summeval-sample-pairs"


@dataclass
class DemoReport:
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def add(self, title: str, result: dict[str, Any]) -> None:
        self.steps.append((title, result))


def run_demo(engine: Engine, say: Callable[[str], None] = lambda _m: None) -> DemoReport:
    report = DemoReport()
    migrate.upgrade(engine)
    say("database migrated")
    parsed = parse_summeval(
        sample_path("summeval_sample.jsonl.gz"), sample_path("summeval_articles_sample.jsonl.gz")
    )
    imported = import_parsed(engine, DATASET, parsed)
    report.add("import the bundled SummEval sample", imported.as_dict())
    say(
        f"imported {DATASET}: {len(parsed.items)} summaries of {len({i.group_key for i in parsed.items})} articles"
    )
    pairs = create_pair_set(engine, DATASET, PAIRS, seed=42, sample=200)
    report.add("sample within-article pairs", pairs.as_dict())
    say(f"pair set {PAIRS}: {pairs.sampled} of {pairs.pairs_total} pairs")
    dups = find_duplicates(engine, DATASET)
    report.add("duplicated annotation rows", dups.as_dict())
    return report
