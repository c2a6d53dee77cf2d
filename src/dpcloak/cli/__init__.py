"""The ``dpcloak`` command line: thin layers that parse input, call the library and present results.

Commands are loaded lazily: ``dpcloak --help`` and ``--version`` import none of them, and ``dpcloak X``
imports only the module of ``X`` (so ``--help`` does not pay for scipy, numba or matplotlib). The
one-line help shown in the command list is read from the command function's docstring without
importing its module.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from dpcloak import __version__

__all__ = ["COMMANDS", "app", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("dpcloak.cli.demo", "demo"),
    "recover": ("dpcloak.cli.recover", "recover"),
    "audit": ("dpcloak.cli.audit", "audit"),
    "sensitivity": ("dpcloak.cli.sensitivity", "sensitivity"),
    "calibrate": ("dpcloak.cli.calibrate", "calibrate"),
    "reproduce": ("dpcloak.cli.reproduce", "reproduce"),
    "heatmap": ("dpcloak.cli.heatmap", "heatmap"),
    "serve": ("dpcloak.cli.serve", "serve"),
    "backup": ("dpcloak.cli.backup", "backup"),
    "deploy": ("dpcloak.cli.deploy", "deploy_app"),
    "sensor": ("dpcloak.cli.sensor", "sensor_app"),
    "network": ("dpcloak.cli.network", "network_app"),
    "example-data": ("dpcloak.cli.example_data", "example_data"),
}
"""Command name → (module, attribute): a command function, or a :class:`typer.Typer` for a group."""


@cache
def short_help(name: str) -> str:
    """First help line of command ``name`` (function docstring or a group's ``help=``), read without importing it."""
    module, attribute = COMMANDS[name]
    package, _, leaf = module.rpartition(".")
    tree = ast.parse(resources.files(package).joinpath(f"{leaf}.py").read_text(encoding="utf-8"))
    doc = next((_own_help(node, attribute) for node in tree.body if _own_help(node, attribute) is not None), None)
    doc = doc or ast.get_docstring(tree) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _own_help(node: ast.stmt, attribute: str) -> str | None:
    """The help of ``attribute`` if ``node`` defines it: a function's docstring, or ``typer.Typer(help=...)``."""
    if isinstance(node, ast.FunctionDef) and node.name == attribute:
        return ast.get_docstring(node)
    if (
        isinstance(node, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == attribute for target in node.targets)
        and isinstance(node.value, ast.Call)
    ):
        for keyword in node.value.keywords:
            value = keyword.value
            if keyword.arg == "help" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    return None


@cache
def load_command(name: str) -> Any:
    """Import command ``name`` and build its click command (once per process)."""
    module, attribute = COMMANDS[name]
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        return typer.main.get_group(target)
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    single.command(name=name)(target)
    return typer.main.get_command(single)


def _one_line(exc: Any) -> str:
    """A click error as one line, with where to find help."""
    message = " ".join(str(exc.format_message()).split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and getattr(ctx, "command_path", None):
        message += f" (see '{ctx.command_path} --help')"
    return message


class _LazyCommand(TyperCommand):
    """Stands in for a command in listings; parsing and invocation go to the real command."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, help=short_help(name), short_help=short_help(name))

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        return load_command(self.name or "").make_context(info_name, args, parent=parent, **extra)


class LazyGroup(TyperGroup):
    """The root group: knows its commands by name and imports one only when it is run.

    A usage mistake (unknown option, a value of the wrong type, a missing argument) is reported like
    every other error: one line ``error: ...`` on stderr, exit status 2.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        extra["windows_expand_args"] = windows_expand_args
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        from typer._click.exceptions import ClickException, NoArgsIsHelpError

        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as exc:  # a bare group: its help, as click shows it
            exc.show()
            sys.exit(exc.exit_code)
        except ClickException as exc:
            sys.stderr.write(f"error: {_one_line(exc)}\n")
            sys.exit(exc.exit_code)
        except typer.Abort:
            sys.stderr.write("error: aborted\n")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *super().list_commands(ctx)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in COMMANDS:
            return _LazyCommand(cmd_name)
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    cls=LazyGroup,
    name="dpcloak",
    help="Private sensor and location data, recovered roughly: where, never exactly where.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help for the command list: rich's formatter costs ~0.2 s of imports
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dpcloak {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """dpcloak command line."""


def main() -> None:
    """Console-script entry point."""
    app()
