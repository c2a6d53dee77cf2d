"""Run a sensor node: privatize locally, enforce the budget, send signed reports."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from dpcloak.cli._common import cli_errors, console
from dpcloak.errors import InvalidParameterError

__all__ = ["sensor_app"]

sensor_app = typer.Typer(help="Run a sensor node: privatize locally, enforce the budget, send signed reports.",
                         no_args_is_help=True)


@sensor_app.command("run")
@cli_errors
def run(
    config: str = typer.Option(..., help="The sensor's credential file (sensors/sensor-<j>.json)."),
    deployment: str = typer.Option(..., help="The deployment's public deployment.json."),
    url: str = typer.Option(..., help="Collector base URL, e.g. http://127.0.0.1:8000."),
    ledger: str = typer.Option(..., help="The sensor's ledger file (created if missing; keep it)."),
    input: str = typer.Option("-", help="'-' for stdin (one reading per line) or a CSV file to tail."),
    follow: bool = typer.Option(False, help="With a CSV file: keep waiting for appended lines (Ctrl-C stops)."),
    windows: int | None = typer.Option(None, help="Stop after this many windows."),
) -> None:
    """Send the readings of one sensor (at most one per window); resend pending reports first."""
    from dpcloak.service import require_service_extra

    require_service_extra()
    from dpcloak.cli._common import check_output_file, check_text_file
    from dpcloak.service.config import load_credential, load_deployment
    from dpcloak.service.node import SensorNode, read_values, tail_csv

    check_text_file("--config", config)
    if not Path(deployment).is_dir():  # a deployment directory or its deployment.json
        check_text_file("--deployment", deployment)
    check_output_file("--ledger", ledger)
    if input != "-":
        check_text_file("--input", input)
    if windows is not None and windows < 1:
        raise InvalidParameterError(f"--windows must be a positive integer, got {windows}", parameter="--windows")
    dep = load_deployment(Path(deployment), rebuild=False)  # the node needs no model (Deployment.release_spec)
    node = SensorNode(deployment=dep, credential=load_credential(Path(config)), ledger=Path(ledger), url=url,
                      attempts=None)  # a daemon: retry with backoff until the collector is back
    try:
        for d in node.flush():
            console.print(f"resent window {d.window}: {d.outcome} (HTTP {d.http_status})")
        values = read_values(sys.stdin) if input == "-" else tail_csv(Path(input), follow=follow)
        sent = node.run(values, windows=windows, on_delivery=lambda d: console.print(
            f"window {d.window}: {d.outcome} (HTTP {d.http_status})"),
            on_skip=lambda notice: console.print(notice, highlight=False))
    except KeyboardInterrupt:
        sent = -1
    finally:
        node.close()
    if sent >= 0:
        console.print(f"sensor {node.sensor}: {sent} report(s) sent")
