"""``dpcloak serve``: the collector (and, with ``--demo``, simulated sensors on a floor plan)."""

from __future__ import annotations

import threading
from pathlib import Path

import typer

from dpcloak.cli._common import cli_errors, console
from dpcloak.errors import InvalidParameterError

__all__ = ["serve"]


@cli_errors
def serve(
    deployment: str | None = typer.Option(None, help="Deployment directory (from `dpcloak deploy init`)."),
    db: str | None = typer.Option(None, help="Database URL (default: SQLite collector.db in the deployment)."),
    demo: bool = typer.Option(False, "--demo", help="Local demo: ./dpcloak-demo deployment + simulated sensors."),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8000, help="TCP port."),
    windows: int | None = typer.Option(None, help="--demo only: stop after this many windows."),
    max_pending: int = typer.Option(20_000, help="Reports waiting for the database before new ones get 503."),
) -> None:
    """Run the collector: ingest signed reports, recover each window, serve the dashboard."""
    if demo == (deployment is not None):
        raise InvalidParameterError("give exactly one of --deployment DIR and --demo")
    if windows is not None and not demo:
        raise InvalidParameterError("--windows is for --demo (a deployment runs until stopped)")
    if windows is not None and windows < 1:
        raise InvalidParameterError(f"--windows must be a positive integer, got {windows}")
    if not 0 < port < 65536:
        raise InvalidParameterError(f"--port must be in [1, 65535], got {port}")
    if max_pending < 1:
        raise InvalidParameterError(f"--max-pending must be >= 1, got {max_pending}")
    from dpcloak.service import require_service_extra

    require_service_extra()
    import uvicorn

    from dpcloak.service.server import build_app, dashboard_url, token_path

    directory = Path.cwd() / "dpcloak-demo" if demo else Path(deployment)  # type: ignore[arg-type]
    if demo:
        from dpcloak.service.demo import demo_deployment

        demo_deployment(directory)
    app = build_app(directory, db_url=db, max_pending=max_pending)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    console.print(f"dashboard: {dashboard_url(directory, host=host, port=port)} (it asks for the analyst token, in "
                  f"{token_path(directory)})", highlight=False, soft_wrap=True)
    stop = threading.Event()
    sim: threading.Thread | None = None
    if demo:
        from dpcloak.service.demo import simulate

        def run_sensors() -> None:
            while not server.started and not stop.is_set():
                stop.wait(0.05)
            try:
                simulate(directory, url=f"http://{host}:{port}", stop=stop, windows=windows)
            finally:
                server.should_exit = True

        sim = threading.Thread(target=run_sensors, name="dpcloak-demo-sensors", daemon=True)
        sim.start()
    try:
        server.run()
    finally:
        stop.set()
        if sim is not None:
            sim.join(timeout=30)
