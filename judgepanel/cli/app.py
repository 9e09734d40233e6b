"""The root Typer app and the registration of command groups.

Start-up time matters (a validation table is a hundred commands), so nothing heavy is imported
here: each command group's module is imported only when one of its commands runs (or its help is
shown), and `judgepanel --help` lists the groups from the table below without importing any. The
command modules in turn import numpy, SQLAlchemy, the SDKs … inside the commands that use them.
"""

from __future__ import annotations

import copy
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, NoReturn

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from judgepanel.cli.coercion import use_plain_coercion
from judgepanel.cli.context import AppState
from judgepanel.config import DB_ENV, database_url
from judgepanel.errors import EXIT_INTERRUPTED, Interrupted, JudgepanelError

# name -> (module, attribute, one-line help shown by `judgepanel --help`). A group's attribute is
# its Typer app; a single command's is its function. tests/cli/test_help.py checks that each line
# equals the help the module itself declares.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "query": ("judgepanel.cli.query_cmd", "query", "Read-only SQL over the results database (table, CSV or JSON)."),
    "demo": ("judgepanel.cli.demo_cmd", "demo", "Import the bundled sample and run the whole job on it, offline."),
    "db": ("judgepanel.cli.db_cmd", "app", "Create, migrate and inspect the results database."),
    "data": ("judgepanel.cli.data_cmd", "app", "Import datasets and derive pair sets."),
    "metrics": ("judgepanel.cli.metrics_cmd", "app", "Agreement, rater matrices and other statistics over stored labels."),
    "rubric": ("judgepanel.cli.rubric_cmd", "app", "Store rubrics as versions with stable clause ids."),
    "campaign": ("judgepanel.cli.campaign_cmd", "app", "Plan, estimate, run and follow judge campaigns."),
    "validate": ("judgepanel.cli.validate_cmd", "app", "Leave-one-annotator-out tests of a judge against a human panel."),
    "plan": ("judgepanel.cli.plan_cmd", "app", "Plan the human re-annotation that judge validation needs."),
    "simulate": ("judgepanel.cli.simulate_cmd", "app", "Simulate re-annotation designs before paying for them."),
    "repair": ("judgepanel.cli.repair_cmd", "app", "Rubric repair: contested clauses, editor rewrites, a before/after comparison."),
    "align": ("judgepanel.cli.align_cmd", "app", "Human-supervised judge alignment (few-shot, instructions, grid), compared with repair."),
    "report": ("judgepanel.cli.report_cmd", "report", "A report people would rather look at than read: what ran, agreement, bias, judges vs humans, cases."),
    "export": ("judgepanel.cli.export_cmd", "export", "Export a campaign's verdicts, attempts, clause verdicts or labels for pandas and other tools."),
    "worker": ("judgepanel.cli.worker_cmd", "worker", "Lease and run campaign jobs alongside other workers on a shared PostgreSQL database."),
    "annotate": ("judgepanel.cli.annotate_cmd", "app", "Annotation queues in the browser that stop when the judge is certified."),
    "compare": ("judgepanel.cli.compare_cmd", "compare", "Two campaigns side by side: what differs, changed verdicts, agreement with humans B − A."),
    "view": ("judgepanel.cli.view_cmd", "view", "A read-only web viewer over the results database, live while campaigns run; JSON under /api/."),
    "fake-server": ("judgepanel.cli.fake_server_cmd", "fake_server", "Serve fake OpenAI and Anthropic APIs on this machine, answered by simulated judges."),
}  # fmt: skip


def _tidy(cmd: Any) -> Any:
    """Flags take no value, so their help shows no `<bool>` type (Typer shows one for every option,
    the help flag included)."""
    ctx = typer.Context(cmd, info_name=cmd.name)
    for param in [*cmd.params, cmd.get_help_option(ctx)]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(cmd, "commands", {}).values():
        _tidy(sub)
    return cmd


class _Subcommands(MutableMapping[str, Any]):
    """A group's subcommands, each built from its Typer registration when first looked up.

    Typer builds every command of a group at once, reading each function's signature for its
    options; `metrics agreement` needs one of the group's ten (about 6 ms of its start-up, issue
    20 §2). Names are known without building (in registration order, as Typer lists them); the
    group's help, which lists them all, builds them all."""

    def __init__(self, builders: dict[str, Callable[[], Any]], built: Mapping[str, Any]) -> None:
        self._builders = builders
        self._built = dict(built)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            self._built[name] = self._builders[name]()  # KeyError: no such command
        return self._built[name]

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._builders.pop(name, None)
        self._built[name] = cmd

    def __delitem__(self, name: str) -> None:
        if name not in self._builders and name not in self._built:
            raise KeyError(name)
        self._builders.pop(name, None)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._builders, *(n for n in self._built if n not in self._builders)])

    def __len__(self) -> int:
        return len(self._builders.keys() | self._built.keys())


def _one_command(obj: typer.Typer, info: Any) -> Callable[[], Any]:
    """A builder of the click command of one command registered on `obj`: Typer's documented
    `typer.main.get_command` over a Typer app that holds that command alone, with `obj`'s settings."""

    def build() -> Any:
        single = typer.Typer(
            add_completion=False,
            pretty_exceptions_short=obj.pretty_exceptions_short,
            rich_markup_mode=obj.rich_markup_mode,
        )
        single.registered_commands.append(info)
        return use_plain_coercion(_tidy(typer.main.get_command(single)))

    return build


def _command_name(info: Any) -> str:
    """The name Typer gives a command: the one registered, else the function's, lower case, with
    dashes for underscores (Typer's documented rule)."""
    return str(info.name or info.callback.__name__.lower().replace("_", "-"))


def _lazy_group(obj: typer.Typer, name: str) -> Any:
    """The click group of a Typer app whose commands are built on first use (`_Subcommands`).

    Public APIs only (issue 31 §3): Typer's `typer.main.get_group` builds the group without its
    commands (a copy of the app whose public `registered_commands` is empty), `_one_command` builds
    each command with the documented `typer.main.get_command`, and the group's `commands` is the
    mapping click's `Group` takes (`MutableMapping[str, Command]`), here one that builds on look-up.
    tests/cli/test_coercion.py checks that the commands are those Typer builds for the whole app."""
    shell = copy.copy(obj)
    shell.registered_commands = []  # the group itself (callback, help, nested groups) only
    group: Any = typer.main.get_group(shell)
    group.name = name
    use_plain_coercion(_tidy(group))
    builders = {_command_name(info): _one_command(obj, info) for info in obj.registered_commands}
    group.commands = _Subcommands(builders, group.commands)
    return group


def load_command(name: str) -> Any:
    """The click command of one top-level name, importing its module now."""
    module, attr, _ = COMMANDS[name]
    mod = importlib.import_module(module)
    obj = getattr(mod, attr)
    if isinstance(obj, typer.Typer):  # a group, even with a single command (`simulate designs`)
        return _lazy_group(obj, name)
    single = typer.Typer(add_completion=False)
    # a command module may pass its own settings (`fake-server` hands every option on)
    single.command(name, **getattr(mod, "COMMAND_SETTINGS", {}))(obj)
    cmd: Any = typer.main.get_command(single)
    cmd.name = name
    return use_plain_coercion(_tidy(cmd))


class LazyGroup(TyperGroup):
    """A root group whose subcommands are imported on first use."""

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(c for c in super().list_commands(ctx) if c not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        if self._listing:  # the root help needs only the name and one line
            line = COMMANDS[cmd_name][2]
            return TyperCommand(cmd_name, help=line, short_help=line)
        if cmd_name not in self.commands:
            self.add_command(load_command(cmd_name), cmd_name)
        return self.commands[cmd_name]

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        use_plain_coercion(self)  # the root options (--db, --version)
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _tidy(self)
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="judgepanel",
    cls=LazyGroup,
    help="Run LLM judge panels and measure how far to trust them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("judgepanel")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from judgepanel import __version__ as installed
        print(f"judgepanel {installed}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    db: str | None = typer.Option(
        None, "--db", envvar=DB_ENV, help="Database URL (default sqlite:///judgepanel.db)."
    ),
    _show_version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the installed version and exit."
    ),
) -> None:
    ctx.obj = AppState(db_url=database_url(db))
    ctx.call_on_close(ctx.obj.close)


def _fail(message: str, code: int) -> NoReturn:
    from judgepanel.cli.render import printable  # messages may quote stored names
    from judgepanel.providers.errors import scrubber  # no configured key in any form, ever

    print(f"judgepanel: {printable(' '.join(scrubber()(message).split()))}", file=sys.stderr)
    sys.exit(code)


def _database_error(exc: BaseException) -> None:
    """SQLAlchemy's operational and programming errors as one line (SQLAlchemy is imported only by
    commands that open a database, so it is looked up, not imported, here)."""
    sa_exc: Any = sys.modules.get("sqlalchemy.exc")
    if sa_exc is None or not isinstance(exc, sa_exc.OperationalError | sa_exc.ProgrammingError):
        return
    line = (str(exc.orig or exc).strip().splitlines() or [type(exc).__name__])[0]
    if "no such table" in line or ("relation" in line and "does not exist" in line):
        _fail(f"error: the database lacks judgepanel's tables ({line}): run `judgepanel db upgrade`", 2)
    if isinstance(exc, sa_exc.ProgrammingError):
        return  # our SQL is wrong: a bug, keep the traceback
    _fail(f"error: database: {line}", 1)


def main(argv: list[str] | None = None) -> None:
    """The console script: every failure a user can cause ends in one line on stderr and exit 2;
    other failures exit 1; Ctrl-C exits 130 (see the CLI contract in DESIGN.md)."""
    try:
        code = app(args=argv, prog_name="judgepanel", standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors: missing option, bad value …
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help text is already printed
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        hint = f"; see `{ctx.command_path} --help`" if ctx is not None else ""
        _fail(f"error: {exc.format_message().strip().rstrip('.')}{hint}", exc.exit_code)
    except typer.Abort:
        _fail("aborted", 1)
    except Interrupted as exc:
        _fail(str(exc), exc.exit_code)
    except JudgepanelError as exc:
        _fail(f"error: {exc}", exc.exit_code)
    except Exception as exc:
        _database_error(exc)
        raise
    if code == EXIT_INTERRUPTED:  # Typer turns KeyboardInterrupt into exit 130, silently
        _fail("interrupted", EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)
