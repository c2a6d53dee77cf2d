"""Running the collector: build it from a deployment directory and serve it with uvicorn."""

from __future__ import annotations

import errno
import math
import socket
import time
from pathlib import Path
from typing import Any

from dpcloak._files import owner_only
from dpcloak._validation import check_int
from dpcloak.errors import InvalidParameterError
from dpcloak.service.app import create_app
from dpcloak.service.collector import Collector
from dpcloak.service.config import (
    ANALYST_FILE,
    Deployment,
    analyst_token,
    load_deployment,
    load_generations,
    load_master_key,
)
from dpcloak.service.settings import Settings
from dpcloak.service.store import Store

__all__ = ["uvicorn_config", "check_history", "HISTORY_FILE", "build_app", "serve", "dashboard_url", "token_path",
           "listening_socket", "freeze_start_up_objects"]

def build_app(settings: Settings) -> Any:
    """The ASGI app of the deployment in ``settings.directory``, served from ``settings.database_url``.

    With ``settings.check_database`` the database is reached and migrated now, so that an unreachable or
    unwritable one is an :class:`~dpcloak.errors.InvalidParameterError` (``parameter="url"``) before
    anything is served, not an error of the server's start-up; and a database without the history
    this deployment's collector already has is refused (:func:`check_history`; ``settings.new_history``
    starts a new one).

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
    >>> app = build_app(Settings(directory=directory, max_pending=500))
    >>> "/api/v1/reports" in app.openapi()["paths"]
    True
    >>> app.state.collector.max_pending, app.state.collector.warm_recovery, app.state.settings.max_pending
    (500, True, 500)
    >>> tmp.cleanup()
    """
    directory = settings.directory
    deployment = load_deployment(directory)
    key = load_master_key(directory)
    store = Store(settings.database_url)
    if store.in_memory:  # each pooled connection would see its own empty database, and every report is lost at exit
        raise InvalidParameterError(f"the database {settings.db_url} is SQLite in memory, which the collector cannot "
                                    "serve from (each connection sees its own empty database, and all is lost at "
                                    "exit); give a file, e.g. sqlite:///collector.db, or PostgreSQL", parameter="url",
                                    allowed="a SQLite file or PostgreSQL", got=settings.db_url)
    if settings.check_database:
        store.migrate()
        check_history(directory, store, deployment, new_history=settings.new_history)
    collector = Collector(deployment, store, master_key=key, close_interval=settings.close_interval,
                          warm_recovery=True, max_pending=settings.max_pending,
                          generations=load_generations(directory), clock=settings.clock)
    return create_app(collector, analyst_token=analyst_token(key, deployment_id=deployment.deployment_id),
                      settings=settings)


HISTORY_FILE = "collector.history"
"""In the deployment directory: which database holds the deployment's history (written at the first start)."""


def check_history(directory: Path, store: Store, deployment: Deployment, *, new_history: bool = False) -> None:
    """Refuse to start a fresh history in a database when this deployment's collector already has one.

    The first start of a collector registers the deployment in its database and writes
    ``collector.history`` (mode 0600: the database's URL without its password and when the history
    began) to the deployment directory. A later start whose database does not know the deployment —
    an empty or replaced ``collector.db``, a wrong ``--db`` — would silently begin again from nothing,
    with the windows, the maps and the policy's count of release windows gone: it is refused, naming
    the database the history was in, unless ``new_history`` (``serve --new-history``) says to start a
    new one (the file is then rewritten).

    Examples
    --------
    >>> import tempfile
    >>> from dpcloak.service.config import write_deployment
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> deployment = two_sensor_deployment()
    >>> _ = write_deployment(directory, deployment)
    >>> from dpcloak.service.store import sqlite_url
    >>> first = Store(sqlite_url(directory / "collector.db"))
    >>> first.migrate()
    >>> check_history(directory, first, deployment)  # the first start: the history begins here
    >>> (directory / HISTORY_FILE).exists()
    True
    >>> empty = Store(sqlite_url(directory / "empty.db"))
    >>> empty.migrate()
    >>> check_history(directory, empty, deployment)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: the database ... holds no history of deployment abc123, but its collector ...
    >>> check_history(directory, empty, deployment, new_history=True)  # on purpose
    >>> first.dispose(); empty.dispose(); tmp.cleanup()
    """
    import json

    from dpcloak.service.config import _write_secret

    path = Path(directory) / HISTORY_FILE
    known = store.has_deployment(deployment.deployment_id)
    if path.exists() and not known and not new_history:
        try:
            recorded = json.loads(path.read_text())
            where, since = str(recorded["database"]), float(recorded["since"])
        except (ValueError, KeyError, TypeError):
            where, since = "(unreadable record)", float("nan")
        began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(since)) if math.isfinite(since) else "?"
        raise InvalidParameterError(
            f"the database {store.engine.url!r} holds no history of deployment {deployment.deployment_id}, but its "
            f"collector has kept one since {began} in {where} ({path}): restore that database (from a backup: "
            "dpcloak backup), point --db at it, or pass --new-history to start a new history on purpose",
            parameter="url", allowed="the database holding the deployment's history", got=repr(store.engine.url))
    if not known:
        store.register(deployment)
    if new_history or not path.exists():
        _write_secret(path, json.dumps({"deployment_id": deployment.deployment_id,
                                        "database": store.engine.url.render_as_string(hide_password=True),
                                        "since": time.time()}))


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
    >>> app = build_app(Settings(directory=directory))
    >>> list(inspect.signature(serve).parameters)
    ['app', 'host', 'port', 'log_level']
    >>> tmp.cleanup()
    """
    import uvicorn

    server = uvicorn.Server(uvicorn_config(app, host=host, port=port, log_level=log_level))
    freeze_start_up_objects()
    server.run()


def freeze_start_up_objects() -> int:
    """Exclude every object alive now from the garbage collector's later passes (``gc.freeze``); returns how many.

    Called once the collector's process is built, just before it serves: the modules, the deployment
    and the app (about 190,000 tracked objects) live as long as the process, yet every full collection
    walked all of them again — about 0.1 s of the ingest process, during which no report is answered.
    Cyclic garbage present now is collected first; what is allocated later is collected as usual.

    Examples
    --------
    >>> import gc
    >>> freeze_start_up_objects() > 1000  # the interpreter's own modules alone
    True
    >>> gc.get_freeze_count() > 1000  # left out of every later collection
    True
    >>> gc.unfreeze()  # (a test process: let later collections see them again)
    """
    import gc

    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def uvicorn_config(app: Any, *, host: str, port: int, log_level: str = "warning") -> Any:
    """The collector's uvicorn configuration: idle connections timed out and evicted, the file limit raised.

    Connections that send nothing cannot starve honest requests of file descriptors
    (:mod:`dpcloak.service.connections`); no access log (rejected requests are logged by the app).

    Examples
    --------
    >>> from dpcloak.service.connections import BoundedHttpProtocol
    >>> config = uvicorn_config(lambda scope, receive, send: None, host="127.0.0.1", port=8000)
    >>> config.http is BoundedHttpProtocol, config.access_log
    (True, False)
    """
    import uvicorn

    from dpcloak.service.connections import BoundedHttpProtocol, raise_file_limit

    raise_file_limit()
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False, http=BoundedHttpProtocol)


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (``host``, ``port``), for :meth:`uvicorn.Server.run` (``sockets=[...]``).

    Binding before anything else is printed or started turns an invalid host, a port in use and a
    privileged port into one :class:`~dpcloak.errors.InvalidParameterError` (``parameter`` is
    ``"host"`` or ``"port"``).

    Examples
    --------
    >>> sock = listening_socket("127.0.0.1", 0)
    >>> sock.getsockname()[0]
    '127.0.0.1'
    >>> sock.listen()  # a server on that port: a second one is refused
    >>> listening_socket("127.0.0.1", sock.getsockname()[1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: port ... is already in use on 127.0.0.1 (another collector?); ...
    >>> sock.close()
    """
    check_int("port", port, minimum=0, maximum=65535)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidParameterError(f"host {host!r} is not an address or a name this machine can resolve ({exc})",
                                    parameter="host", allowed="an IP address or host name of this machine",
                                    got=host) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InvalidParameterError(f"port {port} is already in use on {host} (another collector?); choose "
                                        "another port", parameter="port", allowed="a free port", got=port) from None
        if exc.errno == errno.EACCES:
            raise InvalidParameterError(f"port {port} needs privileges on this machine (ports below 1024 are "
                                        "reserved); choose a port >= 1024", parameter="port",
                                        allowed="a port this user may bind", got=port) from None
        raise InvalidParameterError(f"host {host!r} is not an address of this machine ({exc.strerror or exc})",
                                    parameter="host", allowed="an address of this machine", got=host) from None
    sock.set_inheritable(True)
    return sock
