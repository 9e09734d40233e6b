"""Writing other tools' graders (`datasets.graded`) as an imported campaign, in one transaction.

Boundary: a `GradedLog` in, rows out; the only SQL of `data import-inspect` and
`data import-promptfoo`. What is written:

- the **dataset**: a new one named after the import (`kind` inspect / promptfoo), its items the
  log's samples; or, with `dataset=`, an existing dataset whose items the samples name (sample id =
  item external id; an unknown id refuses the import);
- the **campaign** of the same name, `protocol` pointwise, `status` imported, `spec.source` saying
  where the verdicts came from (tool, files, sha256, task, eval id, model, counts, scales); one
  **judge** per grader (`provider` = the tool, `params.scale` = how its grades became numbers);
- per grade one **job** (`repeat` = epoch − 1 or the promptfoo repeat), one **request** (the
  grading prompt where the log keeps it, template `inspect:SCORER` / `promptfoo:ASSERTION`), one
  **response** (the grader's reply and the grade's raw record) and, for a grade, one **verdict**
  (`value_presented` the grade as given, `value_canonical` / `score` its number, the explanation as
  rationale). A grade without a value (unscored, a grader error) is a failed job with its reason.

Rules: the same file(s) again under the same name change nothing; another import under an
existing name is refused unless `replace=True` (the campaign is replaced; its dataset and any
human labels added to it are kept, its items updated); a log already imported under another name
(its eval id) is refused; all or nothing: any bad sample rolls everything back. Rows go in
`CHUNK` samples at a time, so memory does not grow with the log.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Connection, Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from judgepanel.config import SIM_FINGERPRINT
from judgepanel.datasets.graded import SCALES, Grade, GradedLog, GradedSample, Grader
from judgepanel.datasets.records import check_text
from judgepanel.errors import BadInput
from judgepanel.store import plain
from judgepanel.store import tables as t
from judgepanel.store.sources import TOOLS, imported_source
from judgepanel.store.tables import utcnow

CHUNK = 1_000
SIMULATED_MARK = "[simulated]"  # how the fake server and the sim judge start every rationale


@dataclass(frozen=True)
class GradedImportResult:
    campaign: str
    dataset: str
    unchanged: bool
    items_added: int = 0
    verdicts: int = 0
    failed: int = 0
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    simulated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "dataset": self.dataset,
            "unchanged": self.unchanged,
            "items_added": self.items_added,
            "verdicts": self.verdicts,
            "failed": self.failed,
            "judges": self.judges,
            "counts": self.counts,
            "simulated": self.simulated,
        }


def _job_key(tool: str, ext: str, grader: str, dimension: str, repeat: int) -> str:
    return hashlib.sha256("\x1f".join((tool, ext, grader, dimension, str(repeat))).encode()).hexdigest()


def _spec(tool: str, grader: Grader, campaign: str) -> str:
    return f"{tool}:{grader.model or grader.scorer}?" + urlencode({"grader": grader.key, "import": campaign})


class _Writer:
    def __init__(self, conn: Connection, log: GradedLog, name: str, dataset_id: int, attach: bool) -> None:
        self.conn, self.log, self.name, self.dataset_id, self.attach = conn, log, name, dataset_id, attach
        self.campaign_id = 0
        self.judges: dict[str, int] = {}
        self.grader_of: dict[str, Grader] = {}
        self.per_judge: dict[str, dict[str, int]] = {}
        self.templates: dict[str, tuple[str, str]] = {}
        self.next_position = (
            int(
                conn.execute(
                    select(t.item.c.position)
                    .where(t.item.c.dataset_id == dataset_id)
                    .order_by(t.item.c.position.desc())
                    .limit(1)
                ).scalar()
                or -1
            )
            + 1
        )
        self.items_added = self.verdicts = self.failed = 0
        self.repeats = 1
        self.dimensions: set[str] = set()
        self.simulated = False
        self.replacing = False

    # ---------------------------------------------------------------- judges

    def judge(self, grader: Grader) -> int:
        jid = self.judges.get(grader.key)
        if jid is not None:
            return jid
        spec = _spec(self.log.tool, grader, self.name)
        check_text("a grader name", spec)
        if len(spec) > 500:
            raise BadInput(f"grader name {grader.name[:80]!r}… is too long to store")
        params = {
            "source": self.log.tool,
            "scorer": grader.scorer,
            "grader_model": grader.model,
            "import": self.name,
        }
        row = self.conn.execute(select(t.judge.c.id).where(t.judge.c.name == spec)).scalar()
        if row is None:
            row = self.conn.execute(
                insert(t.judge)
                .values(
                    name=spec,
                    provider=self.log.tool,
                    model=(grader.model or grader.scorer)[:200],
                    params=params,
                )
                .returning(t.judge.c.id)
            ).scalar_one()
        self.conn.execute(insert(t.campaign_judge).values(campaign_id=self.campaign_id, judge_id=row))
        self.judges[grader.key] = int(row)
        self.grader_of[grader.key] = grader
        self.per_judge[grader.name] = {"verdicts": 0, "unscored": 0, "errors": 0}
        return int(row)

    # ---------------------------------------------------------------- items

    def items(self, chunk: Sequence[GradedSample]) -> tuple[dict[str, int], set[str]]:
        """external id -> item id for the chunk's samples, inserting the new ones (refused when
        attaching to an existing dataset) and refusing an id that stands for two different tests;
        and the external ids that were stored before this chunk (only their items can have jobs)."""
        wanted = list(dict.fromkeys(s.external_id for s in chunk))
        found: dict[str, tuple[int, dict[str, Any]]] = {}
        for k in range(0, len(wanted), 500):
            for iid, ext, meta in self.conn.execute(
                select(t.item.c.id, t.item.c.external_id, t.item.c.meta).where(
                    t.item.c.dataset_id == self.dataset_id, t.item.c.external_id.in_(wanted[k : k + 500])
                )
            ):
                found[ext] = (int(iid), meta or {})
        before = set(found)
        new: dict[str, GradedSample] = {}
        updates: list[dict[str, Any]] = []
        for s in chunk:
            identity = s.meta.get("identity")
            have = found.get(s.external_id)
            if have is not None:
                stored = have[1].get("identity")
                if identity and stored and stored != identity and have[1].get("import") == self.name:
                    raise BadInput(
                        f"{self.log.files[0]}: duplicate id {s.external_id!r}: two different test cases "
                        "carry it (nothing was imported)"
                    )
                if self.replacing and have[1].get("import") == self.name and not self.attach:
                    updates.append(
                        {"b_id": have[0], "input": s.input, "output": s.output, "meta": self._meta(s)}
                    )
                continue
            if self.attach:
                raise BadInput(
                    f"{self.log.files[0]}: sample {s.external_id!r} names no item of the dataset "
                    "(with --dataset, every sample id must be an item's id; nothing was imported)"
                )
            prev = new.get(s.external_id)
            if prev is not None:
                if identity and prev.meta.get("identity") and prev.meta.get("identity") != identity:
                    raise BadInput(
                        f"{self.log.files[0]}: duplicate id {s.external_id!r}: two different test cases "
                        "carry it (nothing was imported)"
                    )
                continue
            new[s.external_id] = s
        if updates:
            from sqlalchemy import bindparam

            self.conn.execute(
                update(t.item)
                .where(t.item.c.id == bindparam("b_id"))
                .values(input=bindparam("input"), output=bindparam("output"), meta=bindparam("meta")),
                updates,
            )
        if new:
            rows = [
                (s.external_id, self.next_position + k, s.input, s.output, self._meta(s))
                for k, s in enumerate(new.values())
            ]
            self.next_position += len(rows)
            self.items_added += len(rows)
            got = _insert(
                self.conn,
                t.item,
                ("external_id", "position", "input", "output", "meta"),
                rows,
                same={"dataset_id": self.dataset_id, "group_key": None, "system": None, "split": None},
                returning=("id", "external_id"),
            )
            for iid, ext in got:
                found[ext] = (int(iid), {})
        return {ext: iid for ext, (iid, _meta) in found.items()}, before

    def _meta(self, s: GradedSample) -> dict[str, Any]:
        return {**s.meta, "import": self.name}

    # ---------------------------------------------------------------- repeats

    def repeats_for(self, chunk: Sequence[GradedSample], ids: dict[str, int], before: set[str]) -> list[int]:
        """The repeat of each sample: given (Inspect epochs), or the next one of its item (asked of
        the database only for items stored before this chunk: a new item has no jobs yet)."""
        if all(s.repeat is not None for s in chunk):
            return [int(s.repeat or 0) for s in chunk]
        item_ids = list({ids[s.external_id] for s in chunk if s.external_id in before})
        from sqlalchemy import func

        nxt: dict[int, int] = {}
        for k in range(0, len(item_ids), 500):
            for iid, top in self.conn.execute(
                select(t.job.c.item_id, func.max(t.job.c.repeat))
                .where(t.job.c.campaign_id == self.campaign_id, t.job.c.item_id.in_(item_ids[k : k + 500]))
                .group_by(t.job.c.item_id)
            ):
                nxt[int(iid)] = int(top) + 1
        out = []
        for s in chunk:
            if s.repeat is not None:
                out.append(s.repeat)
                continue
            iid = ids[s.external_id]
            r = nxt.get(iid, 0)
            out.append(r)
            if s.grades:
                nxt[iid] = r + 1
        return out

    # ---------------------------------------------------------------- grades

    def write(self, chunk: Sequence[GradedSample]) -> None:
        ids, before = self.items(chunk)
        repeats = self.repeats_for(chunk, ids, before)
        grades: list[tuple[GradedSample, int, Grade, str]] = []
        keys: dict[str, str] = {}
        for s, rep in zip(chunk, repeats, strict=True):
            self.repeats = max(self.repeats, rep + 1)
            for g in s.grades:
                key = _job_key(self.log.tool, s.external_id, g.grader.key, g.dimension, rep)
                if key in keys:
                    raise self._duplicate(s, g, rep)
                keys[key] = s.external_id
                grades.append((s, rep, g, key))
        if not grades:
            return
        # a job of this campaign can exist only for an item stored before this chunk (an earlier
        # chunk found or inserted it): the keys of the chunk's new items need no look-up
        known = [key for key, ext in keys.items() if ext in before]
        clash = (
            self.conn.execute(
                select(t.job.c.job_key).where(
                    t.job.c.campaign_id == self.campaign_id, t.job.c.job_key.in_(known)
                )
            ).first()
            if known
            else None
        )
        if clash is not None:
            s, rep, g, _key = next(x for x in grades if x[3] == clash[0])
            raise self._duplicate(s, g, rep)
        now = utcnow()
        got = _insert(
            self.conn,
            t.job,
            ("job_key", "judge_id", "item_id", "dimension", "repeat", "status", "error_class"),
            [
                (
                    key,
                    self.judge(g.grader),
                    ids[s.external_id],
                    g.dimension,
                    rep,
                    "failed" if g.value is None else "done",
                    g.error_class if g.value is None else None,
                )
                for s, rep, g, key in grades
            ],
            same={"campaign_id": self.campaign_id, "attempts": 1, "updated_at": now},
            returning=("id", "job_key"),
        )
        self.dimensions.update(g.dimension for _s, _rep, g, _key in grades)
        by_key = {key: jid for jid, key in got}
        job_ids = [by_key[key] for _s, _rep, _g, key in grades]
        got = _insert(
            self.conn,
            t.request,
            ("job_id", "request_hash", "template_name", "template_hash", "messages", "params"),
            [
                (
                    jid,
                    key,
                    *self.template(g.grader),
                    g.messages,
                    {"imported": self.log.tool, "sample": s.external_id, "repeat": rep},
                )
                for (s, rep, g, key), jid in zip(grades, job_ids, strict=True)
            ],
            same={"attempt": 1, "output_schema": None, "created_at": now},
            returning=("id", "job_id"),
        )
        by_job = {jid: rid for rid, jid in got}
        responses, verdicts = [], []
        for (_s, _rep, g, _key), jid in zip(grades, job_ids, strict=True):
            rid = by_job[jid]
            simulated = (g.rationale or g.text or "").lstrip().startswith(SIMULATED_MARK)
            self.simulated |= simulated
            model = g.grader.model or g.grader.scorer
            stats = self.per_judge[g.grader.name]
            failed = g.value is None
            responses.append(
                (
                    rid,
                    not failed,
                    g.error_class if failed else None,
                    g.error if failed else None,
                    g.raw,
                    g.text,
                    (f"sim/{model}" if simulated else model)[:200],
                    SIM_FINGERPRINT if simulated else None,
                    g.input_tokens,
                    g.output_tokens,
                )
            )
            if failed:
                self.failed += 1
                stats["errors" if g.error_class == "fatal" else "unscored"] += 1
                continue
            self.verdicts += 1
            stats["verdicts"] += 1
            verdicts.append((jid, rid, (g.presented or "")[:20], f"{g.value:.15g}", g.value, g.rationale))
        _insert(
            self.conn,
            t.response,
            (
                "request_id",
                "ok",
                "error_class",
                "error_message",
                "raw_body",
                "text",
                "model_returned",
                "system_fingerprint",
                "input_tokens",
                "output_tokens",
            ),
            responses,
            same={
                "http_status": None,
                "finish_reason": None,
                "latency_ms": None,
                "queued_ms": None,
                "cost_usd": None,
                "cached_from": None,
                "cache_read_tokens": None,
                "cache_write_tokens": None,
                "created_at": now,
            },
        )
        _insert(
            self.conn,
            t.verdict,
            ("job_id", "request_id", "value_presented", "value_canonical", "score", "rationale"),
            verdicts,
            same={
                "attempt": 1,
                "parse_status": "ok",
                "parse_method": "imported",
                "failure_kind": None,
                "created_at": now,
            },
        )

    def template(self, grader: Grader) -> tuple[str, str]:
        """The request's template name and hash for a grader's grades (the same for every one)."""
        got = self.templates.get(grader.scorer)
        if got is None:
            name = f"{self.log.tool}:{grader.scorer}"
            got = self.templates[grader.scorer] = (name[:200], hashlib.sha256(name.encode()).hexdigest())
        return got

    def _duplicate(self, s: GradedSample, g: Grade, rep: int) -> BadInput:
        what = "epoch" if self.log.tool == "inspect" else "repeat"
        shown = rep + 1 if self.log.tool == "inspect" else rep
        return BadInput(
            f"{', '.join(self.log.files)}: duplicate sample id {s.external_id!r} ({what} {shown}): "
            f"graded twice by {g.grader.name!r}"
            + (f" on {g.dimension!r}" if g.dimension else "")
            + "; nothing was imported"
        )


def _insert(
    conn: Connection,
    table: Any,
    columns: tuple[str, ...],
    rows: list[tuple[Any, ...]],
    *,
    same: dict[str, Any],
    returning: tuple[str, ...] = (),
) -> list[tuple[Any, ...]]:
    """Insert `rows` (tuples in the order of `columns`, each followed by the values of `same`) as
    multi-row VALUES pages with plain parameters (`store.plain`: the bind processors SQLAlchemy
    would run, without its per-row work, and a value every row shares converted once); the
    `returning` columns of every row back in no promised order. Core on another driver."""
    if not rows:
        return []
    if plain.supported(conn.dialect):
        return plain.insert(conn, table, columns, rows, same=same, returning=returning)
    dicts = [{**dict(zip(columns, r, strict=True)), **same} for r in rows]
    stmt = insert(table).returning(*(table.c[c] for c in returning)) if returning else insert(table)
    result = conn.execute(stmt, dicts)
    return [tuple(r) for r in result] if returning else []


def _chunks(samples: Iterable[GradedSample]) -> Iterable[list[GradedSample]]:
    chunk: list[GradedSample] = []
    for s in samples:
        chunk.append(s)
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _delete_campaign(conn: Connection, cid: int) -> None:
    jobs = select(t.job.c.id).where(t.job.c.campaign_id == cid)
    requests = select(t.request.c.id).where(t.request.c.job_id.in_(jobs))
    conn.execute(delete(t.verdict).where(t.verdict.c.job_id.in_(jobs)))
    conn.execute(delete(t.response).where(t.response.c.request_id.in_(requests)))
    conn.execute(delete(t.request).where(t.request.c.job_id.in_(jobs)))
    conn.execute(delete(t.job).where(t.job.c.campaign_id == cid))
    conn.execute(delete(t.campaign_judge).where(t.campaign_judge.c.campaign_id == cid))
    conn.execute(delete(t.campaign).where(t.campaign.c.id == cid))


def import_graded(
    engine: Engine, name: str, log: GradedLog, *, replace: bool = False, dataset: str | None = None
) -> GradedImportResult:
    """Store `log` as campaign `name` (module docstring); all or nothing."""
    if not name.strip():
        raise BadInput("an import name must not be empty")
    check_text("the import name", name)
    try:
        with engine.begin() as conn:
            return _import(conn, name, log, replace, dataset)
    except IntegrityError as exc:
        raise BadInput(
            f"cannot import {', '.join(log.files)} as {name!r}: it conflicts with stored rows "
            f"({exc.orig.__class__.__name__}); nothing was imported"
        ) from exc


def _import(
    conn: Connection, name: str, log: GradedLog, replace: bool, dataset: str | None
) -> GradedImportResult:
    camp = conn.execute(select(t.campaign).where(t.campaign.c.name == name)).first()
    replacing = False
    kept_dataset: int | None = None
    if camp is not None:
        source = imported_source(camp.spec)
        if source is None:
            raise BadInput(f"campaign {name!r} exists and was not imported; choose another --name")
        ds_name = conn.execute(select(t.dataset.c.name).where(t.dataset.c.id == camp.dataset_id)).scalar()
        if source.get("sha256") == log.source_hash:
            return GradedImportResult(name, str(ds_name), True, counts=dict(source.get("counts") or {}))
        if not replace:
            raise BadInput(
                f"{name!r} already holds an import of {', '.join(source.get('files') or [])}; "
                "pass --replace to replace it"
            )
        if dataset is not None and dataset != ds_name:
            raise BadInput(f"{name!r} was imported into dataset {ds_name!r}, not {dataset!r}")
        _delete_campaign(conn, camp.id)
        replacing = True
        kept_dataset = camp.dataset_id
    for other_name, spec in conn.execute(select(t.campaign.c.name, t.campaign.c.spec)):
        src = imported_source(spec)
        if src is None:
            continue
        again = sorted(set(log.eval_ids) & set(src.get("eval_ids") or []))
        if again:
            raise BadInput(
                f"{', '.join(log.files)}: this log ({again[0]}) is already imported as {other_name!r}; "
                f"re-import it under that name with --replace"
            )
    attach = dataset is not None
    if kept_dataset is not None:
        dataset_id = kept_dataset
        ds_name = conn.execute(select(t.dataset.c.name).where(t.dataset.c.id == dataset_id)).scalar_one()
        attach = (
            conn.execute(select(t.dataset.c.kind).where(t.dataset.c.id == dataset_id)).scalar() not in TOOLS
        )
    elif dataset is not None:
        row = conn.execute(select(t.dataset.c.id).where(t.dataset.c.name == dataset)).scalar()
        if row is None:
            known = (
                ", ".join(conn.execute(select(t.dataset.c.name).order_by(t.dataset.c.name)).scalars())
                or "none"
            )
            raise BadInput(f"no dataset named {dataset!r} (known: {known})")
        dataset_id, ds_name = int(row), dataset
    else:
        if conn.execute(select(t.dataset.c.id).where(t.dataset.c.name == name)).first() is not None:
            raise BadInput(
                f"a dataset named {name!r} exists already; choose another --name, or attach the grades "
                f"to its items with --dataset {name}"
            )
        dataset_id = conn.execute(
            insert(t.dataset)
            .values(name=name, kind=log.tool, source_hash=log.source_hash, meta={}, created_at=utcnow())
            .returning(t.dataset.c.id)
        ).scalar_one()
        ds_name = name
    cid = conn.execute(
        insert(t.campaign)
        .values(
            name=name,
            dataset_id=dataset_id,
            protocol="pointwise",
            repeats=1,
            status="imported",
            spec={},
            created_at=utcnow(),
        )
        .returning(t.campaign.c.id)
    ).scalar_one()
    w = _Writer(conn, log, name, dataset_id, attach)
    w.campaign_id, w.replacing = cid, replacing
    for chunk in _chunks(log.samples):
        w.write(chunk)
    if not w.judges and not log.counts.get("samples"):
        raise BadInput(f"{', '.join(log.files)}: no samples to import")
    specs = {g: _spec(log.tool, w.grader_of[g], name) for g in w.judges}
    for key, jid in w.judges.items():
        scale = log.scales.get(key)
        params = conn.execute(select(t.judge.c.params).where(t.judge.c.id == jid)).scalar() or {}
        conn.execute(
            update(t.judge)
            .where(t.judge.c.id == jid)
            .values(params={**params, "scale_name": scale, "scale": SCALES.get(scale) if scale else None})
        )
    counts = dict(sorted(log.counts.items()))
    record = {
        "tool": log.tool,
        "files": log.files,
        "sha256": log.source_hash,
        "sources": log.sources,
        "eval_ids": log.eval_ids,
        "counts": counts,
        "scales": {k: log.scales.get(k) for k in w.judges},
        "simulated": w.simulated,
        "dataset": ds_name,
    }
    dims = sorted(w.dimensions)
    conn.execute(
        update(t.campaign)
        .where(t.campaign.c.id == cid)
        .values(
            dimension=dims[0] if len(dims) == 1 and dims[0] else None,
            repeats=w.repeats,
            spec={
                "judges": [specs[k] for k in w.judges],
                "judge_names": [w.grader_of[k].name for k in w.judges],
                "source": record,
            },
        )
    )
    meta = conn.execute(select(t.dataset.c.meta).where(t.dataset.c.id == dataset_id)).scalar() or {}
    # a dataset the import made lists it among its imports (a label file may then join it, as it
    # may join `import-items`); grades attached to another dataset are listed apart, so that the
    # dataset's own import rules (`store.imports`) see only its own files
    where = "attached_grades" if w.attach else "imports"
    imports = [
        i for i in meta.get(where, []) if not (i.get("kind") == log.tool and i.get("campaign") == name)
    ]
    imports.append(
        {
            "kind": log.tool,
            "campaign": name,
            "sha256": log.source_hash,
            "files": log.files,
            "at": utcnow().isoformat(timespec="seconds"),
            "skipped": {k: v for k, v in counts.items() if k not in ("samples", "grades")},
        }
    )
    conn.execute(update(t.dataset).where(t.dataset.c.id == dataset_id).values(meta={**meta, where: imports}))
    return GradedImportResult(
        campaign=name,
        dataset=ds_name,
        unchanged=False,
        items_added=w.items_added,
        verdicts=w.verdicts,
        failed=w.failed,
        judges={g.name: {**w.per_judge[g.name], "scale": log.scales.get(k)} for k, g in w.grader_of.items()},
        counts=counts,
        simulated=w.simulated,
    )
