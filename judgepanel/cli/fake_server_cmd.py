"""`judgepanel fake-server`: the offline playground, a local OpenAI/Anthropic-compatible server.

The options are the fake server's own (`--port`, `--latency`, `--fail-rate`, `--fault`, `--rpm`,
…; `judgepanel fake-server --help` lists them), parsed by the server module so the command and
`python -m` take exactly the same ones. The first stdout line is its URL; Ctrl-C stops it.
"""

from __future__ import annotations

from typing import Any

import typer

# passed to Typer when the command is registered: every option goes to the server's own parser,
# `--help` included
COMMAND_SETTINGS: dict[str, Any] = {
    "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True},
    "add_help_option": False,
}


def fake_server(ctx: typer.Context) -> None:
    """Serve fake OpenAI and Anthropic APIs on this machine, answered by simulated judges."""
    from judgepanel.fake.server import main

    main(list(ctx.args), prog="judgepanel fake-server")
