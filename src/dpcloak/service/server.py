"""Running the collector: build it from a deployment directory and serve it with uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpcloak._files import owner_only
from dpcloak.service.app import create_app
from dpcloak.service.collector import Collector
from dpcloak.service.config import (
    ANALYST_FILE,
    analyst_token,
    load_deployment,
    load_generations,
    load_master_key,
)
from dpcloak.service.store import Store, sqlite_url

__all__ = ["build_app", "serve", "dashboard_url", "token_path"]

DEFAULT_DB = "collector.db"


def build_app(directory: Path, *, db_url: str | None = None, close_interval: float = 0.25,
              max_pending: int = 20_000) -> Any:
    """The ASGI app of the deployment in ``directory`` (SQLite ``collector.db`` there unless ``db_url``;
    ``max_pending``: back-pressure limit of :class:`~dpcloak.service.collector.Collector`).

    Examples
    --------
    >>> from dpcloak.service.config import write_deployment
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, deployment)
    >>> app = build_app(directory, max_pending=500)
    >>> "/api/v1/reports" in {r.path for r in app.routes}
    True
    >>> app.ingest.collector.max_pending, app.ingest.collector.warm_recovery
    (500, True)
    >>> tmp.cleanup()
    """
    deployment = load_deployment(directory)
    key = load_master_key(directory)
    store = Store(db_url or sqlite_url(Path(directory) / DEFAULT_DB))
    collector = Collector(deployment, store, master_key=key, close_interval=close_interval, warm_recovery=True,
                          max_pending=max_pending, generations=load_generations(directory))
    return create_app(collector, analyst_token=analyst_token(key, deployment_id=deployment.deployment_id))


def dashboard_url(directory: Path, *, host: str, port: int) -> str:
    """The dashboard's URL, without the analyst token: the page asks for it (:func:`token_path` holds it).

    Examples
    --------
    >>> dashboard_url(Path("site"), host="127.0.0.1", port=8000), dashboard_url(Path("site"), host="::1", port=80)
    ('http://127.0.0.1:8000/dashboard/', 'http://[::1]:80/dashboard/')
    """
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/dashboard/"


def token_path(directory: Path) -> Path:
    """The file holding the deployment's analyst token, made readable by its owner only (0600).

    ``dpcloak serve`` prints this path, never the token (a start line lands in service logs).

    Examples
    --------
    >>> from dpcloak.service.config import write_deployment
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, two_sensor_deployment())
    >>> path = token_path(directory)
    >>> path.name, oct(path.stat().st_mode & 0o777)
    ('analyst.token', '0o600')
    >>> tmp.cleanup()
    """
    path = Path(directory) / ANALYST_FILE
    owner_only(path)
    return path


def serve(app: Any, *, host: str, port: int, log_level: str = "warning") -> None:
    """Serve ``app`` with uvicorn until interrupted.

    Examples
    --------
    ``serve`` blocks until interrupted, so it is run in its own process or thread; the app it serves
    comes from :func:`build_app`:

    >>> from dpcloak.service.config import write_deployment
    >>> import inspect
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> _ = write_deployment(directory, deployment)
    >>> app = build_app(directory)
    >>> list(inspect.signature(serve).parameters)
    ['app', 'host', 'port', 'log_level']
    >>> tmp.cleanup()
    """
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)
