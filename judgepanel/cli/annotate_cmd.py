"""`judgepanel annotate …`: annotation queues that stop when the judge is certified (issue 32)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from judgepanel.cli.context import state
from judgepanel.cli.options import JSON
from judgepanel.cli.render import console, emit_json, fmt_number, table
from judgepanel.errors import BadInput

app = typer.Typer(
    help="Annotation queues in the browser that stop when the judge is certified.", no_args_is_help=True
)

TOKEN_ENV = "JUDGEPANEL_VIEW_TOKEN"


@app.command("create")
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The queue's name."),
    dataset: str | None = typer.Option(None, "--dataset", help="The dataset whose items are labelled."),
    kind: str = typer.Option(
        "pointwise", "--kind", help="pointwise (a score per item) | pairwise (A, B or tie)"
    ),
    dimension: str | None = typer.Option(None, "--dimension", help="The dimension labelled."),
    rubric: str | None = typer.Option(
        None, "--rubric", help="NAME[@V]: show the dimension's clauses as a checklist."
    ),
    instructions: Path | None = typer.Option(
        None, "--instructions", help="A text file shown above every item."
    ),
    allocation: str | None = typer.Option(
        None, "--allocation", help="Items and assignments of a `plan allocate`."
    ),
    items: int | None = typer.Option(
        None, "--items", help="How many of the dataset's items (or of --pairs)."
    ),
    order: str = typer.Option("random", "--order", help="random | stratified | disagreement (seeded)"),
    pairs: str | None = typer.Option(None, "--pairs", help="A pair set: a pairwise queue of its pairs."),
    per_item: int = typer.Option(2, "--per-item", help="Distinct annotators each item needs."),
    reserve_minutes: float = typer.Option(
        30.0, "--reserve-minutes", help="How long an opened item stays reserved."
    ),
    access: str = typer.Option("any", "--access", help="any | assigned (the allocation's assignments)"),
    group: str | None = typer.Option(
        None, "--group", help="The annotators' group (default: the queue's name)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the order and of the sides shown."),
    epsilon: float = typer.Option(0.2, "--epsilon", help="The alt-test margin the certification uses."),
    q: float = typer.Option(0.05, "--q", help="The certification's false discovery rate."),
    scorer: str | None = typer.Option(
        None, "--scorer", help="accuracy | neg-rmse (default: neg-rmse on a numeric scale)"
    ),
    scale: str | None = typer.Option(
        None, "--scale", help="LO-HI or a,b,c (default: the rubric's, else 1-5)."
    ),
    stop_when_decided: bool = typer.Option(
        False, "--stop-when-decided", help="Stop handing out items once every judge is decided."
    ),
    json_: bool = JSON,
) -> None:
    """Create a queue: which items, in what order, how many labels each needs, who may label."""
    from judgepanel.annotate.queues import CreateOptions, create, read_instructions

    opts = CreateOptions(
        name=name,
        dataset=dataset,
        kind=kind,
        dimension=dimension,
        rubric=rubric,
        instructions=read_instructions(instructions),
        allocation=allocation,
        items=items,
        order=order,
        pairs=pairs,
        per_item=per_item,
        reserve_minutes=reserve_minutes,
        access=access,
        group=group,
        seed=seed,
        epsilon=epsilon,
        q=q,
        scorer=scorer,
        stop_when_decided=stop_when_decided,
        scale=scale,
    )
    out = create(state(ctx).engine(), opts)
    if json_:
        emit_json(out)
        return
    console.print(
        f"queue {out['queue']}: {out['units']} {out['kind']} units in {out['order']} order, "
        f"{out['labels_needed']} labels to give (group {out['group']})",
        markup=False,
        highlight=False,
    )


@app.command("invite")
def invite(
    ctx: typer.Context,
    queue: str = typer.Argument(..., help="The queue."),
    name: str = typer.Argument(..., help="The annotator's name."),
    base_url: str = typer.Option(
        "http://127.0.0.1:8765", "--base-url", help="Where `annotate serve` answers, for the link."
    ),
    json_: bool = JSON,
) -> None:
    """Print a link with a fresh token for an annotator (stored only as a hash; an earlier link
    of the same annotator stops working)."""
    from judgepanel.annotate.queues import invite as make

    out = make(state(ctx).engine(), queue, name, base_url)
    # the one place a token is shown: printed as is (every other output redacts `jpa-` tokens
    # as it does API keys, `providers.errors.redact`)
    if json_:
        sys.stdout.write(json.dumps({"url": out["url"], "token": out["token"]}) + "\n")
    else:
        sys.stdout.write(out["url"] + "\n")
    sys.stdout.flush()


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    queue: str = typer.Argument(..., help="The queue."),
    name: str = typer.Argument(..., help="The annotator's name."),
    json_: bool = JSON,
) -> None:
    """Stop an annotator's link working (at their next request) and give back their reservations."""
    from judgepanel.store.annotation import revoke as drop

    out = drop(state(ctx).engine(), queue, name)
    if json_:
        emit_json(out)
        return
    console.print(
        f"revoked {name} in {queue}; {out['released']} reservation(s) given back",
        markup=False,
        highlight=False,
    )


@app.command("list")
def list_(ctx: typer.Context, json_: bool = JSON) -> None:
    """The queues with their progress."""
    from judgepanel.store.annotation import list_queues

    rows = list_queues(state(ctx).engine())
    if json_:
        emit_json({"queues": rows})
        return
    table(
        "annotation queues",
        ["queue", "dataset", "kind", "dimension", "status", "labels", "annotators"],
        [
            [r["name"], r["dataset"], r["kind"], r["dimension"] or "", r["status"],
             f"{r['labels_done']}/{r['labels_total']}", r["annotators"]]
            for r in rows
        ],
    )  # fmt: skip


@app.command("status")
def status(
    ctx: typer.Context,
    queue: str = typer.Argument(..., help="The queue."),
    bootstrap: int = typer.Option(200, "--bootstrap", help="Resamples of α's interval (0: none)."),
    json_: bool = JSON,
) -> None:
    """Progress, agreement and the certification state of each stored judge."""
    from judgepanel.annotate.certify import status as compute

    if not 0 <= bootstrap <= 100_000:
        raise BadInput(f"--bootstrap must be between 0 and 100000, got {bootstrap}")
    out = compute(state(ctx).engine(), queue, n_boot=bootstrap)
    if json_:
        emit_json(out)
        return
    p = out["progress"]
    a = out["agreement"]
    console.print(
        f"{out['queue']} ({out['status']}): {p['labels_done']}/{p['labels_total']} labels, "
        f"{p['complete']}/{p['units']} units complete; α = {fmt_number(a['value'])}",
        markup=False,
        highlight=False,
    )
    table(
        "annotators",
        ["annotator", "labels", "edits", "skips", "s/label"],
        [
            [n, m["labels"], m["edits"], m["skips"], fmt_number(m["seconds_per_label"], 1)]
            for n, m in out["annotators"].items()
        ],
    )
    table(
        f"certification (ε = {out['certification']['epsilon']:g})",
        ["judge", "state", "ω", "α with humans", ""],
        [[j, e["state"], fmt_number(e.get("omega")), fmt_number(e.get("alpha_with_humans")), e["message"]]
         for j, e in out["judges"].items()],
    )  # fmt: skip


@app.command("close")
def close(
    ctx: typer.Context,
    queue: str = typer.Argument(..., help="The queue."),
    reopen: bool = typer.Option(False, "--reopen", help="Open a closed queue again."),
) -> None:
    """Close a queue (no more labels or edits), or reopen it."""
    from judgepanel.store.annotation import set_status

    set_status(state(ctx).engine(), queue, "open" if reopen else "closed")
    console.print(f"{queue} {'reopened' if reopen else 'closed'}", markup=False, highlight=False)


@app.command("delete")
def delete(
    ctx: typer.Context,
    queue: str = typer.Argument(..., help="The queue."),
    force: bool = typer.Option(False, "--force", help="Delete even while reservations are live."),
    json_: bool = JSON,
) -> None:
    """Remove a queue, its seats, members and history; the labels stay (they are ordinary labels)."""
    from judgepanel.store.annotation import delete_queue

    out = delete_queue(state(ctx).engine(), queue, force=force)
    if json_:
        emit_json({"queue": queue, **out})
        return
    console.print(
        f"deleted queue {queue} ({out['units']} units); its labels are kept", markup=False, highlight=False
    )


@app.command("serve")
def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; any but loopback needs --token."),
    port: int = typer.Option(8765, "--port", help="Port to listen on (0: any free port)."),
    token: str | None = typer.Option(
        None, "--token", envvar=TOKEN_ENV, help="The owner's token for the owner's pages (as `view`)."
    ),
) -> None:
    """The annotators' pages (each annotator's own link) and the owner's live pages."""
    from judgepanel.annotate.serve import serve as run

    st = state(ctx)
    st.engine()  # the database must exist at this schema revision (one clear line otherwise)
    st.close()
    run(st.db_url, host=host, port=port, token=token)
