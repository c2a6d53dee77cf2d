"""``dpcloak serve``: the collector (and, with ``--demo``, simulated sensors on a floor plan)."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import typer

from dpcloak.cli._common import cli_errors, console, err_console, readdressed
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
    new_history: bool = typer.Option(False, "--new-history", help="Start a new history in a database that does "
                                     "not hold this deployment's, although its collector ran before (refused "
                                     "otherwise: an empty or replaced database is not a silent fresh start)."),
    time_scale: float = typer.Option(1.0, help="--demo only: simulated seconds per real second (tests, quick looks; "
                                               "the collector and the simulated sensors follow that clock)."),
) -> None:
    """Run the collector: ingest signed reports, recover each window, serve the dashboard."""
    if demo == (deployment is not None):
        raise InvalidParameterError("give exactly one of --deployment DIR and --demo", parameter="--deployment")
    if windows is not None and not demo:
        raise InvalidParameterError("--windows is for --demo (a deployment runs until stopped)",
                                    parameter="--windows")
    if windows is not None and windows < 1:
        raise InvalidParameterError(f"--windows must be a positive integer, got {windows}", parameter="--windows")
    if not 0 < port < 65536:
        raise InvalidParameterError(f"--port must be in [1, 65535], got {port}", parameter="--port")
    if time_scale != 1.0 and not demo:
        raise InvalidParameterError("--time-scale is for --demo (a deployment follows the wall clock)",
                                    parameter="--time-scale")
    if not 1.0 <= time_scale <= 10_000.0:
        raise InvalidParameterError(f"--time-scale must be in [1, 10000], got {time_scale:g}", parameter="--time-scale")
    from dpcloak.service import require_service_extra

    require_service_extra()
    import uvicorn

    from dpcloak.service.server import build_app, dashboard_url, listening_socket, token_path, uvicorn_config
    from dpcloak.service.settings import Settings

    directory = Path.cwd() / "dpcloak-demo" if demo else Path(deployment)  # type: ignore[arg-type]
    clock: Any = None
    if demo:  # also at 1x: a restarted demo resumes its clock after the sensors' ledgers
        from dpcloak.service.demo import DemoClock

        clock = DemoClock(time_scale)
    flags = {"url": "--db", "max_pending": "--max-pending"}
    try:
        settings = Settings(directory=directory, db_url=db, max_pending=max_pending, check_database=True,
                            new_history=new_history or demo, **({} if clock is None else {"clock": clock}))
    except InvalidParameterError as exc:
        raise readdressed(exc, flags) from None
    sock = listening_socket(host, port)  # an invalid host or a busy port is refused before anything starts
    try:
        if demo:
            from dpcloak.service.demo import demo_deployment

            demo_deployment(directory)
        try:
            app = build_app(settings)
        except InvalidParameterError as exc:
            raise readdressed(exc, flags) from None
        stop = threading.Event()

        class Server(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:  # Ctrl-C: the simulated sensors stop at once too
                if not stop.is_set():
                    name = "Ctrl-C" if sig == signal.SIGINT else signal.Signals(sig).name
                    err_console.print(f"{name}: stopping the collector (reports are committed first)",
                                      highlight=False)
                stop.set()
                super().handle_exit(sig, frame)

        server = Server(uvicorn_config(app, host=host, port=port))
        console.print(f"dashboard: {dashboard_url(directory, host=host, port=port)} (it asks for the analyst token, "
                      f"in {token_path(directory)})", highlight=False, soft_wrap=True)
        _run(server, sock, directory, stop, url=f"http://{host}:{port}" if ":" not in host else
             f"http://[{host}]:{port}", demo=demo, windows=windows, collector=app.state.collector, clock=clock)
    finally:
        sock.close()


MAPS_WAIT_SECONDS = 120.0


def _await_maps(collector: Any, stop: threading.Event) -> None:
    """Wait until the collector has recovered every window it holds reports for, or Ctrl-C, or the bound."""
    deadline = time.monotonic() + MAPS_WAIT_SECONDS
    if collector.unrecovered_windows:
        console.print("the last window is sent: recovering its map before stopping", highlight=False)
    while collector.unrecovered_windows and not stop.is_set() and time.monotonic() < deadline:
        stop.wait(0.1)
    if collector.unrecovered_windows and not stop.is_set():
        err_console.print(f"[yellow]warning:[/] {collector.unrecovered_windows} window(s) not recovered within "
                          f"{MAPS_WAIT_SECONDS:g} s; they are recovered at the next start", highlight=False)


def _run(server: Any, sock: socket.socket, directory: Path, stop: threading.Event, *, url: str, demo: bool,
         windows: int | None, collector: Any, clock: Any = None) -> None:
    """Serve until Ctrl-C (or, for the demo, the last window); the simulated sensors run beside it."""
    sim: threading.Thread | None = None
    if demo:
        from dpcloak.service.demo import simulate

        def run_sensors() -> None:
            while not server.started and not stop.is_set():
                stop.wait(0.05)
            while not (stop.is_set() or collector.recovery_ready(0.1)):  # windows get their maps from the first
                pass
            try:
                simulate(directory, url=url, stop=stop, windows=windows, clock=clock)
                if windows is not None:  # the windows asked for are shown: wait for their maps (bounded)
                    _await_maps(collector, stop)
            except Exception as exc:  # the collector went away under them: only worth a word if not stopping
                if not (stop.is_set() or server.should_exit):
                    err_console.print(f"[yellow]warning:[/] the simulated sensors stopped: {type(exc).__name__}: "
                                      f"{exc}", highlight=False)
            finally:
                server.should_exit = True

        sim = threading.Thread(target=run_sensors, name="dpcloak-demo-sensors", daemon=True)
        sim.start()
    from dpcloak.service.server import freeze_start_up_objects

    try:
        freeze_start_up_objects()
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shuts down gracefully, then re-raises the Ctrl-C it caught: a normal end
        pass
    finally:
        stop.set()
        if sim is not None:
            sim.join(timeout=2)  # a daemon: what it has not sent stays pending in its sensors' ledgers
