"""The ``dpcloak`` command line: thin layers that parse input, call the library and present results."""

from __future__ import annotations

import typer

from dpcloak import __version__
from dpcloak.cli.audit import audit
from dpcloak.cli.calibrate import calibrate
from dpcloak.cli.demo import demo
from dpcloak.cli.heatmap import heatmap
from dpcloak.cli.network import network_app
from dpcloak.cli.recover import recover
from dpcloak.cli.reproduce import reproduce
from dpcloak.cli.sensitivity import sensitivity

__all__ = ["app", "main"]

app = typer.Typer(
    name="dpcloak",
    help="Private sensor and location data, recovered roughly: where, never exactly where.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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


app.command()(demo)
app.command()(recover)
app.command()(audit)
app.command()(sensitivity)
app.command()(calibrate)
app.command()(reproduce)
app.command()(heatmap)
app.add_typer(network_app, name="network")


def main() -> None:
    """Console-script entry point."""
    app()
