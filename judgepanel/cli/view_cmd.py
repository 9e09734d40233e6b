"""`judgepanel view [--host 127.0.0.1] [--port 8765] [--token T] [--open]`: the read-only web viewer."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from judgepanel.cli.context import state
from judgepanel.errors import BadInput

TOKEN_ENV = "JUDGEPANEL_VIEW_TOKEN"


def _bundle(ctx: typer.Context, folder: Path, campaigns: list[str], json_: bool) -> None:
    from judgepanel.cli.render import emit_json
    from judgepanel.store.engine import display_url
    from judgepanel.store.readonly import read_only_engine
    from judgepanel.view.bundle import write_bundle

    st = state(ctx)
    st.engine()
    st.close()
    engine = read_only_engine(st.db_url)
    try:
        result = write_bundle(engine, folder, campaigns or None, db_label=display_url(st.db_url))
    finally:
        engine.dispose()
    if json_:
        emit_json(result.as_dict())
    else:
        print(
            f"{folder}: {result.pages} pages for {len(result.campaigns)} campaigns ({result.verdicts} verdicts); "
            f"open {folder / 'index.html'}"
        )


def view(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; any but loopback needs --token."),
    port: int = typer.Option(8765, "--port", help="Port to listen on (0: any free port)."),
    token: str | None = typer.Option(
        None, "--token", envvar=TOKEN_ENV, help="Required on every request (?token=… once, or Bearer)."
    ),
    open_: bool = typer.Option(False, "--open", help="Open the viewer in the default browser."),
    bundle: Path | None = typer.Option(
        None,
        "--bundle",
        help="Write a static copy of the viewer into this new or empty folder instead of serving.",
    ),
    campaign: list[str] = typer.Option(
        [], "--campaign", help="With --bundle: the campaigns to include (default: all)."
    ),
    json_: bool = typer.Option(False, "--json", help="With --bundle: print one JSON object."),
) -> None:
    """A read-only web viewer over the results database, live while campaigns run; JSON under /api/."""
    if bundle is not None:
        _bundle(ctx, bundle, campaign, json_)
        return
    if campaign:
        raise BadInput("--campaign chooses what --bundle writes; the viewer shows every campaign")
    from judgepanel.view.listen import check_address, host_names, listen

    check_address(host, port, token, give_token=f"--token (or {TOKEN_ENV})")
    import uvicorn

    from judgepanel.store.engine import display_url
    from judgepanel.store.readonly import read_only_engine
    from judgepanel.view.app import POOL_SIZE, POOL_TIMEOUT_S, create_app

    st = state(ctx)
    st.engine()  # the database must exist at this schema revision (one clear line otherwise)
    st.close()
    engine = read_only_engine(st.db_url, pool_size=POOL_SIZE, pool_timeout=POOL_TIMEOUT_S)
    sock, url = listen(host, port)
    print(url + ("  (token required)" if token else ""), flush=True)
    app = create_app(engine, token=token, allowed_hosts=host_names(host), db_label=display_url(st.db_url))
    if open_:
        import webbrowser

        webbrowser.open(url + (f"?token={token}" if token else ""))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        engine.dispose()
        sock.close()
    sys.stdout.flush()
