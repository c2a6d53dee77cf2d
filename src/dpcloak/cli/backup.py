"""``dpcloak backup``: a consistent copy of the collector's SQLite database (SQLite's backup API)."""

from __future__ import annotations

from pathlib import Path

import typer

from dpcloak.cli._common import cli_errors, console, readdressed
from dpcloak.errors import InvalidParameterError

__all__ = ["backup"]


@cli_errors
def backup(
    target: str = typer.Argument(..., help="New file for the copy (written with mode 0600)."),
    deployment: str = typer.Option(..., help="Deployment directory (its collector.db is copied unless --db)."),
    db: str | None = typer.Option(None, help="Database URL (default: SQLite collector.db in the deployment)."),
) -> None:
    """Copy the collector's SQLite database consistently (WAL included; safe while it runs)."""
    from dpcloak.service import require_service_extra

    require_service_extra()
    from dpcloak.service.config import load_deployment
    from dpcloak.service.settings import DEFAULT_DB
    from dpcloak.service.store import Store, sqlite_url

    dep = load_deployment(Path(deployment))
    url = db or sqlite_url(Path(deployment) / DEFAULT_DB)
    if db is None and not (Path(deployment) / DEFAULT_DB).exists():
        raise InvalidParameterError(f"no database to back up: {Path(deployment) / DEFAULT_DB} does not exist",
                                    parameter="--deployment", got=str(Path(deployment) / DEFAULT_DB))
    store = Store(url)
    try:
        out = store.backup(Path(target))
        copy = Store(sqlite_url(out))
        try:
            windows = copy.window_count(dep.deployment_id)
            reports = sum(copy.report_counts(dep.deployment_id).values())
        finally:
            copy.dispose()
    except InvalidParameterError as exc:
        raise readdressed(exc, {"url": "--db", "target": "TARGET"}) from None
    finally:
        store.dispose()
    console.print(f"backup of deployment {dep.deployment_id} written to {out}: {windows} closed window(s), "
                  f"{reports} report(s); restore by stopping the collector and putting the copy in "
                  "place of its database", highlight=False)
