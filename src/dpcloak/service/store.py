"""Storage of reports and recovered windows: SQLite (default) or PostgreSQL, through SQLAlchemy 2 Core.

SQLite runs in WAL mode with ``synchronous=FULL``: a commit is on disk (fsynced) when it returns, so
an acknowledged report survives a crash or power loss. PostgreSQL (``postgresql+psycopg://…``)
commits durably by default (``synchronous_commit=on``). Reports are inserted with
``INSERT … ON CONFLICT DO NOTHING RETURNING sensor_id, window``: the unique (deployment, window, sensor)
slot index decides, inside the database, which rows are new — a retried or replayed report is never
stored twice.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Engine, Float, Integer, bindparam, create_engine, event, func, select, text, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

from dpcloak._files import owner_only, sqlite_owner_only
from dpcloak.errors import InvalidParameterError
from dpcloak.service import _network
from dpcloak.service.config import Deployment
from dpcloak.service.schema import collector_state, deployments, reports, security_events, sensors, windows

__all__ = ["Store", "StoredReport", "WindowRecord", "ClosingCursor", "sqlite_url", "storage_full"]

Slot = tuple[int, int]
"""A report's (sensor, window): the database holds at most one report per slot."""

ClosingCursor = tuple[float, int]
"""A position in the order windows were closed in: ``(closed_at, window)`` of the last window seen."""

STARTUP_LOCK = 0x6470636C6F616B  # "dpcloak"
"""PostgreSQL advisory lock key held while a collector migrates or registers (:meth:`Store.migrate`)."""

MIGRATIONS = Path(__file__).parent / "migrations"
"""The Alembic migrations; each ``versions/vNNNN_<what>.py`` holds revision ``NNNN``, revising the one before."""


def head_revision() -> str:
    """The newest migration's revision (the highest ``NNNN`` of ``versions/vNNNN_*.py``).

    Examples
    --------
    >>> from alembic.config import Config
    >>> from alembic.script import ScriptDirectory
    >>> config = Config()
    >>> config.set_main_option("script_location", str(MIGRATIONS))
    >>> head_revision() == ScriptDirectory.from_config(config).get_current_head()  # Alembic's own reading
    True
    """
    return max(path.name[1:5] for path in (MIGRATIONS / "versions").glob("v[0-9][0-9][0-9][0-9]_*.py"))


READ_PAGE = 256
"""Windows read per query when iterating over all of them (:meth:`Store.windows`): memory stays constant."""


# The analyst API's reads, built once (the dashboard polls them every 2 s: building a statement cost more than
# running it). Each takes its values as bound parameters; SQLAlchemy compiles each once per dialect.
_DEP = windows.c.deployment_id == bindparam("d")
_LIMIT = bindparam("n", type_=Integer)
_WINDOW_COLUMNS = [c for c in windows.c if c.name != "deployment_id"]  # WindowRecord's fields
_CLOSING_ORDER = (windows.c.closed_at, windows.c.window)
_CLOSED_AFTER = (select(*_WINDOW_COLUMNS).where(_DEP & (tuple_(*_CLOSING_ORDER) > tuple_(
    bindparam("c", type_=Float), bindparam("w", type_=BigInteger)))).order_by(*_CLOSING_ORDER).limit(_LIMIT))
_CLOSED_FIRST = select(*_WINDOW_COLUMNS).where(_DEP).order_by(*_CLOSING_ORDER).limit(_LIMIT)
_LAST_CLOSED = (select(*_CLOSING_ORDER).where(_DEP)
                .order_by(windows.c.closed_at.desc(), windows.c.window.desc()).limit(1))
_IN_RANGE = _DEP & (windows.c.window > bindparam("after", type_=BigInteger)) & (
    windows.c.window < bindparam("before", type_=BigInteger))
_PAGE_UP = select(*_WINDOW_COLUMNS).where(_IN_RANGE).order_by(windows.c.window).limit(_LIMIT)
_PAGE_DOWN = select(*_WINDOW_COLUMNS).where(_IN_RANGE).order_by(windows.c.window.desc()).limit(_LIMIT)
_COUNT = select(func.count()).select_from(windows).where(_DEP)
_COUNT_ALL = select(func.count()).select_from(windows)
_OTHER_DEPLOYMENTS = (select(deployments.c.deployment_id)
                      .where(deployments.c.deployment_id != bindparam("d")).limit(1))
_REPORT_DEP = reports.c.deployment_id == bindparam("d")
_REPORTS_FROM = _REPORT_DEP & (reports.c.window >= bindparam("low", type_=BigInteger))
_REPORTS_IN = _REPORTS_FROM & (reports.c.window < bindparam("high", type_=BigInteger))
_SENSOR = (reports.c.sensor_id + 0).label("sensor")  # grouped through the slot index (see reports_per_sensor)
_ACTIVITY_RECENT = (select(_SENSOR, func.max(reports.c.window), func.count(), func.sum(reports.c.value))
                    .where(_REPORTS_FROM).group_by(_SENSOR))
_ACTIVITY_OLDER = select(_SENSOR, func.max(reports.c.window)).where(_REPORTS_IN).group_by(_SENSOR)
_NEWEST = select(func.max(reports.c.window)).where(_REPORT_DEP)
_ARRIVED = select(reports.c.sensor_id, reports.c.window, reports.c.received_at).where(
    _REPORT_DEP & reports.c.window.in_(bindparam("ws", expanding=True)))
_WITH_REPORTS = select(reports.c.window).distinct().where(_REPORTS_IN).order_by(reports.c.window)
_NO_WINDOW = 2**63 - 1
"""Above every window index (``ReportIn.window <= 2**62``): the open end of a range."""


def _last_windows_back(conn: Any, deployment_id: str, *, low: int, high: int, found: dict[int, int],
                       n_sensors: int | None, open_above: bool = False) -> None:
    """Add to ``found`` each sensor's last window in ``low … high - 1`` (sensors already in it are kept), reading
    backwards from ``high`` in spans of 16, 32, 64… windows until ``n_sensors`` sensors are in ``found``.

    With ``open_above`` the first span has no upper end (``high`` is the newest window holding a report,
    plus one: a report stored meanwhile for a newer window is not missed). Each span is one query through
    the slot index.
    """
    upper, span = _NO_WINDOW if open_above else high, 16
    while high > low and (n_sensors is None or len(found) < n_sensors):
        start = max(low, high - span)
        for s, w in conn.execute(_ACTIVITY_OLDER, {"d": deployment_id, "low": start, "high": upper}):
            found.setdefault(int(s), int(w))
        high = upper = start
        span *= 2


def sqlite_url(path: Path | str) -> str:
    """SQLAlchemy URL of a SQLite database file.

    Examples
    --------
    >>> sqlite_url("/var/lib/dpcloak/collector.db")
    'sqlite:////var/lib/dpcloak/collector.db'
    """
    return f"sqlite:///{Path(path).resolve()}"


_FULL_WORDS = ("database or disk is full", "no space left on device", "disk quota exceeded", "could not extend file",
               "could not write to file")


def storage_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot write for lack of space (a full disk, a quota, a size limit).

    Recognised through the exception chain (SQLAlchemy wraps the driver's error; an error from the
    recovery process arrives as its text): ``OSError`` ENOSPC / EDQUOT, SQLite's SQLITE_FULL ("database
    or disk is full"), PostgreSQL's class 53 (``disk_full`` 53100, "could not extend file", "No space
    left on device").

    Examples
    --------
    >>> import errno, sqlite3
    >>> from sqlalchemy.exc import OperationalError
    >>> storage_full(OperationalError("INSERT", {}, sqlite3.OperationalError("database or disk is full")))
    True
    >>> storage_full(OSError(errno.ENOSPC, "No space left on device")), storage_full(ValueError("no"))
    (True, False)
    >>> storage_full(OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked")))
    False
    """
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if isinstance(at, OSError) and at.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if str(getattr(at, "sqlstate", "") or "").startswith("53"):
            return True
        if any(word in str(at).lower() for word in _FULL_WORDS):
            return True
        at = getattr(at, "orig", None) or at.__cause__ or at.__context__
    return False


@dataclass(frozen=True)
class StoredReport:
    """One stored report.

    Examples
    --------
    >>> r = StoredReport(sensor_id=0, window=2, report_id="r-2", value=4.0, received_at=150.0)
    >>> r.sensor_id, r.window, r.value
    (0, 2, 4.0)
    """

    sensor_id: int
    window: int
    report_id: str
    value: float
    received_at: float


@dataclass(frozen=True)
class WindowRecord:
    """One closed window as stored: the recovered map and what it was computed from.

    ``source_map`` is people per source location; ``uncertainty`` / ``uncertainty_90`` the median and
    90th percentile of the bootstrap EMD in metres (``NetworkRecovery``); ``epsilon_window`` at
    ``delta_window`` is one window's guarantee, ``epsilon_period`` at ``delta_period`` the composed
    guarantee of the budget period up to this window (``releases_in_period`` readings of the busiest sensor);
    ``outliers`` the sensors flagged as outlying and left out of the map, ``{"sensor": j, "z": z}``
    (:func:`dpcloak.service.poisoning.robust_recover`; at most one). ``status`` says how the map was
    obtained (``"fit"``, ``"least-residual"``: no map of the model comes within the noise of the readings
    and no uncertainty is stated, ``"empty"``, ``"private counts"``; :class:`~dpcloak.sensors.NetworkRecovery`),
    ``misfit`` the share of the readings' energy the map leaves unexplained, ``residual`` the distance from
    the map's readings to the private readings and ``radius`` the distance the noise allows (reading units;
    ``None`` where it does not apply, and all four in windows closed before they were recorded).

    Examples
    --------
    >>> from dpcloak.service.windows import recover_window_record
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> store = Store(sqlite_url(directory / "collector.db"))
    >>> store.migrate()
    >>> store.register(deployment)
    >>> _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": 0, "report_id": f"r-{j}",
    ...                         "value": v, "mac": "00", "received_at": 30.0} for j, v in [(0, 10.0), (1, 4.0)]])
    >>> record, _ = recover_window_record(deployment, store, 0)
    >>> isinstance(record, WindowRecord), record.window, record.reporting, record.missing, len(record.source_map)
    (True, 0, [0, 1], 0, 2)
    >>> sorted(record.as_dict())[:4]
    ['closed_at', 'converged', 'delta_period', 'delta_window']
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    window: int
    closed_at: float
    source_map: list[float]
    uncertainty: float | None
    uncertainty_90: float | None
    reporting: list[int]
    missing: int
    sigma: float
    epsilon_window: float
    delta_window: float
    epsilon_period: float
    delta_period: float
    releases_in_period: int
    converged: bool
    message: str
    outliers: list[dict[str, Any]] = field(default_factory=list)
    status: str | None = None
    misfit: float | None = None
    residual: float | None = None
    radius: float | None = None

    def as_dict(self, *, with_map: bool = True) -> dict[str, Any]:
        """JSON-ready dict (without the map when ``with_map`` is false).

        Besides the fields it holds ``flagged`` (a sensor was missing or flagged as an outlier),
        ``uncertainty_text`` (the uncertainty in words, or why none is stated:
        :func:`~dpcloak.sensors.result.uncertainty_words`), ``total`` (people on the whole map) and ``peak``
        (the largest value of one source location), also without the map.
        """
        from dpcloak.sensors.result import uncertainty_words

        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if with_map or k != "source_map"}
        out["flagged"] = self.missing > 0 or bool(self.outliers)
        out["uncertainty_text"] = uncertainty_words(uncertainty=self.uncertainty, uncertainty_90=self.uncertainty_90,
                                                    status=self.status, misfit=self.misfit)
        out["total"] = math.fsum(self.source_map)
        out["peak"] = max(self.source_map, default=0.0)
        return out


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    sqlite_owner_only(dbapi_connection)  # 0600 (and so its WAL files) before the first write
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA busy_timeout=30000")  # first: switching to WAL waits for another connection's lock too
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


class Store:
    """The collector's database.

    Parameters
    ----------
    url : str
        SQLAlchemy URL: ``sqlite:///path.db`` or ``postgresql+psycopg://user@host:port/db``.

    Examples
    --------
    >>> from dpcloak.service.examples import two_sensor_deployment
    >>> deployment = two_sensor_deployment()
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> directory = Path(tmp.name)
    >>> store = Store(sqlite_url(directory / "collector.db"))
    >>> store.migrate()
    >>> store.register(deployment)
    >>> rows = [{"deployment_id": "abc123", "sensor_id": 0, "window": 0, "report_id": "r-0", "value": 3.5,
    ...          "mac": "00", "received_at": 30.0}]
    >>> store.insert_reports(rows)  # the (sensor, window) slots newly filled
    {(0, 0)}
    >>> store.report_counts("abc123"), store.window_readings("abc123", 0)
    ({0: 1}, [(0, 3.5)])
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    def __init__(self, url: str) -> None:
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise InvalidParameterError(f"database URL must be a SQLAlchemy URL such as sqlite:///collector.db or "
                                        f"postgresql+psycopg://user@host/db, got {url!r}", parameter="url",
                                        allowed="a SQLAlchemy URL", got=url) from None
        self.url = url
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise InvalidParameterError(f"database must be sqlite or postgresql, got {self.dialect!r}", parameter="url",
                                        allowed="sqlite or postgresql", got=self.dialect)
        kwargs: dict[str, Any] = {}
        if self.dialect == "sqlite":
            kwargs["connect_args"] = {"check_same_thread": False}
        else:
            kwargs.update(pool_size=8, max_overflow=8, pool_pre_ping=True)
        self.engine: Engine = create_engine(url, **kwargs)
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._insert = (sqlite.insert if self.dialect == "sqlite" else postgresql.insert)

    @property
    def in_memory(self) -> bool:
        """Whether this is an in-memory SQLite database (``sqlite://``): private to each connection, gone at exit.

        Examples
        --------
        >>> Store("sqlite://").in_memory, Store("sqlite:///:memory:").in_memory, Store("sqlite:///c.db").in_memory
        (True, True, False)
        """
        return self.dialect == "sqlite" and self.engine.url.database in (None, "", ":memory:")

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision`` (default: the newest Alembic revision).

        A database already at the newest revision (every start but the first after an upgrade) is recognised
        by reading its ``alembic_version`` row, without loading Alembic (a quarter of a second of imports).
        """
        try:
            with self._startup_lock():  # also the first connection, which switches a new SQLite file to WAL
                if revision == "head" and self._revision() == head_revision():
                    return
                from alembic import command
                from alembic.config import Config

                cfg = Config()
                cfg.set_main_option("script_location", str(MIGRATIONS))
                with self.engine.begin() as conn:
                    self._advisory_lock(conn)
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, revision)
        except OperationalError as exc:
            reason = " ".join(str(exc.orig).split())
            raise InvalidParameterError(f"cannot reach or migrate the database {self.engine.url!r}: {reason}",
                                        parameter="url", allowed="a reachable, writable database",
                                        got=repr(self.engine.url)) from None

    def _revision(self) -> str | None:
        """The database's Alembic revision; ``None`` for a database without one (new, or not dpcloak's)."""
        with self.engine.connect() as conn:  # an unreachable database raises here (OperationalError)
            try:
                rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
            except DBAPIError:  # no such table
                return None
        return str(rows[0][0]) if len(rows) == 1 else None

    @contextlib.contextmanager
    def _startup_lock(self) -> Iterator[None]:
        """Serialise the start-up (migration, registration) of collectors sharing one SQLite file.

        SQLite runs DDL outside a transaction in Python's driver, so two collectors migrating one new
        file at once both try to create the same tables; an exclusive ``flock`` on ``<file>.lock``
        (mode 0600) makes the second wait for the first and then find the schema current. PostgreSQL
        uses :meth:`_advisory_lock` instead (nothing to do here); an in-memory database is private.
        """
        database = self.engine.url.database
        if self.dialect != "sqlite" or self.in_memory:
            yield
            return
        import fcntl

        try:
            fd = os.open(f"{database}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            owner_only(f"{database}.lock")  # an existing lock file keeps its mode otherwise
        except OSError:  # no such directory, read-only: SQLite's own error follows, naming the database
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _advisory_lock(self, conn: Any) -> None:
        """On PostgreSQL, hold the transaction-level advisory lock :data:`STARTUP_LOCK` until ``conn`` commits:
        collectors starting together on one database migrate and register one after the other."""
        if self.dialect == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": STARTUP_LOCK})

    def backup(self, target: Path | str) -> Path:
        """A consistent copy of a SQLite database in ``target`` (a new file, mode 0600), through SQLite's backup API.

        Copying ``collector.db`` alone is not a backup: committed data may still sit in its WAL file
        (``collector.db-wal``), and a copy taken while the collector writes may be torn. The backup API
        copies the database as one transaction sees it, WAL included, page by page, also while the
        collector runs. PostgreSQL has its own tools (``pg_dump``) and is refused here.

        Examples
        --------
        >>> import tempfile
        >>> from dpcloak.service.examples import two_sensor_store
        >>> tmp = tempfile.TemporaryDirectory()
        >>> deployment, store = two_sensor_store(tmp.name, reading=10.0)  # one report, window 0 closed
        >>> copy = Store(sqlite_url(store.backup(Path(tmp.name) / "backup.db")))
        >>> copy.report_counts("abc123"), copy.closed_windows("abc123")
        ({0: 1}, [0])
        >>> oct(Path(tmp.name, "backup.db").stat().st_mode & 0o777)
        '0o600'
        >>> copy.dispose(); store.dispose(); tmp.cleanup()
        """
        import sqlite3

        database = self.engine.url.database
        if self.dialect != "sqlite" or self.in_memory or database is None:
            raise InvalidParameterError(f"dpcloak backup copies a SQLite database file; {self.engine.url!r} is not one "
                                        "(for PostgreSQL use pg_dump)", parameter="url",
                                        allowed="a SQLite database file", got=repr(self.engine.url))
        out = Path(target)
        if out.exists():
            raise InvalidParameterError(f"backup target {out} already exists; choose a new file", parameter="target",
                                        allowed="a path that does not exist", got=str(out))
        os.close(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        source = sqlite3.connect(database)
        try:
            dest = sqlite3.connect(out)
            try:
                source.backup(dest)
                dest.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            finally:
                dest.close()
        finally:
            source.close()
        return out

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    # --- deployments -------------------------------------------------------------------------------------------

    def has_deployment(self, deployment_id: str) -> bool:
        """Whether the database holds deployment ``deployment_id`` (registered by a collector before)."""
        stmt = select(deployments.c.deployment_id).where(deployments.c.deployment_id == deployment_id)
        with self.engine.connect() as conn:
            return conn.execute(stmt).first() is not None

    def register(self, deployment: Deployment) -> None:
        """Record the deployment and its sensors; refuse one whose stored fingerprint differs."""
        with self._startup_lock(), self.engine.begin() as conn:
            self._advisory_lock(conn)
            row = conn.execute(select(deployments.c.fingerprint)
                               .where(deployments.c.deployment_id == deployment.deployment_id)).first()
            if row is not None:
                if row.fingerprint != deployment.fingerprint:
                    raise InvalidParameterError(
                        f"the database already holds deployment {deployment.deployment_id} with configuration "
                        f"fingerprint {row.fingerprint}, not {deployment.fingerprint}; use a new database",
                        parameter="deployment", got=deployment.fingerprint)
                return
            conn.execute(deployments.insert().values(
                deployment_id=deployment.deployment_id, fingerprint=deployment.fingerprint,
                config=json.dumps(deployment.public_dict(), sort_keys=True), created_at=time.time()))
            positions = _network.sensor_positions(deployment.sensor_network)
            conn.execute(sensors.insert(), [
                {"deployment_id": deployment.deployment_id, "sensor_id": j,
                 "position": [float(v) for v in positions[j]]}
                for j in range(deployment.n_sensors)])

    # --- reports -----------------------------------------------------------------------------------------------

    def insert_reports(self, rows: Sequence[dict[str, Any]]) -> set[Slot]:
        """Insert reports in one transaction (one fsync); return the (sensor, window) slots they newly filled.

        A row whose slot is already taken stores nothing (the caller tells a retry from a replay).
        """
        if not rows:
            return set()
        stmt = self._insert(reports).on_conflict_do_nothing().returning(reports.c.sensor_id, reports.c.window)
        with self.engine.begin() as conn:
            return {(r[0], r[1]) for r in conn.execute(stmt, list(rows))}

    def find_reports(self, deployment_id: str, slots: Sequence[Slot]) -> list[StoredReport]:
        """The stored reports in these (sensor, window) slots (read through the slot index)."""
        keys = sorted({(int(w), int(s)) for s, w in slots})
        out: list[StoredReport] = []
        with self.engine.connect() as conn:
            for i in range(0, len(keys), 400):  # bounded parameter lists
                out += self._reports(conn, (reports.c.deployment_id == deployment_id)
                                     & tuple_(reports.c.window, reports.c.sensor_id).in_(keys[i:i + 400]))
        return out

    @staticmethod
    def _reports(conn: Any, where: Any) -> list[StoredReport]:
        cols = (reports.c.sensor_id, reports.c.window, reports.c.report_id, reports.c.value, reports.c.received_at)
        return [StoredReport(*r) for r in conn.execute(select(*cols).where(where).order_by(reports.c.id)).all()]

    def window_readings(self, deployment_id: str, window: int) -> list[tuple[int, float]]:
        """``(sensor, value)`` of each report of one window, in sensor order (the slot index's: no sort).

        What a window's recovery reads, and nothing more: at 1,000 reports a window it takes 0.7 ms,
        against 2.2 ms for the full reports sorted afterwards.
        """
        stmt = (select(reports.c.sensor_id, reports.c.value)
                .where((reports.c.deployment_id == deployment_id) & (reports.c.window == window))
                .order_by(reports.c.sensor_id))
        with self.engine.connect() as conn:
            return [(int(sensor), float(value)) for sensor, value in conn.execute(stmt).all()]

    def sensor_total(self, deployment_id: str, sensor: int, *, first_window: int,
                     last_window: int) -> tuple[float, int]:
        """The sum of one sensor's reported values over windows ``first_window … last_window`` and how many there are.

        Reads the (deployment, window, sensor) index over that range only.
        """
        stmt = (select(func.sum(reports.c.value), func.count()).where(
            (reports.c.deployment_id == deployment_id) & (reports.c.window >= first_window)
            & (reports.c.window <= last_window) & (reports.c.sensor_id == sensor)))
        with self.engine.connect() as conn:
            total, count = conn.execute(stmt).one()
        return float(total or 0.0), int(count)

    def sensor_streams(self, deployment_id: str, sensors: Sequence[int], *, last_window: int,
                       first_window: int = 0) -> dict[int, list[tuple[int, float]]]:
        """Per sensor of ``sensors``: its ``(window, value)`` reports of windows ``first_window`` … ``last_window``, in
        window order (a continual counter's stream: decoding needs it from its start; the (deployment, window,
        sensor) index)."""
        out: dict[int, list[tuple[int, float]]] = {int(j): [] for j in sensors}
        stmt = (select(reports.c.sensor_id, reports.c.window, reports.c.value)
                .where((reports.c.deployment_id == deployment_id) & (reports.c.window >= max(0, int(first_window)))
                       & (reports.c.window <= last_window) & reports.c.sensor_id.in_(sorted(out)))
                .order_by(reports.c.window, reports.c.sensor_id))
        with self.engine.connect() as conn:
            for sensor, window, value in conn.execute(stmt):
                out[int(sensor)].append((int(window), float(value)))
        return out

    def all_reports(self, deployment_id: str) -> list[StoredReport]:
        """Every stored report of the deployment, in arrival order."""
        with self.engine.connect() as conn:
            return self._reports(conn, reports.c.deployment_id == deployment_id)

    def report_counts(self, deployment_id: str, *, unclosed: bool = False, first_window: int = 0,
                      below: int | None = None) -> dict[int, int]:
        """Number of reports per window (only of the windows not closed yet, with ``unclosed``).

        Only windows ``first_window <= window < below`` (``below`` optional) are read, through the slot
        index: the cost is that range's reports, not the history's.

        Examples
        --------
        >>> import tempfile
        >>> from dpcloak.service.examples import two_sensor_store
        >>> with tempfile.TemporaryDirectory() as directory:
        ...     _, store = two_sensor_store(directory, reading=10.0)  # window 0: one report, closed
        ...     _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": 0, "window": w, "report_id": f"r{w}",
        ...                                "value": 1.0, "mac": "00", "received_at": 60.0 * w} for w in (1, 2, 3)])
        ...     counts = [store.report_counts("abc123", unclosed=True, first_window=a, below=b)
        ...               for a, b in [(0, None), (2, None), (0, 3)]]
        ...     store.dispose()
        >>> counts
        [{1: 1, 2: 1, 3: 1}, {2: 1, 3: 1}, {1: 1, 2: 1}]
        """
        in_range = (reports.c.deployment_id == deployment_id) & (reports.c.window >= first_window)
        if below is not None:
            in_range = in_range & (reports.c.window < below)
        stmt = select(reports.c.window, func.count()).where(in_range)
        if unclosed:
            stmt = stmt.where(reports.c.window.not_in(select(windows.c.window).where(
                (windows.c.deployment_id == deployment_id) & (windows.c.window >= first_window))))
        stmt = stmt.group_by(reports.c.window)
        with self.engine.connect() as conn:
            return {int(w): int(c) for w, c in conn.execute(stmt)}

    def closed_below(self, deployment_id: str) -> int:
        """The window below which every window holding reports is closed (0 until :meth:`set_closed_below`).

        Examples
        --------
        >>> import tempfile
        >>> from dpcloak.service.examples import two_sensor_store
        >>> with tempfile.TemporaryDirectory() as directory:
        ...     _, store = two_sensor_store(directory)
        ...     marks = [store.closed_below("abc123")]
        ...     store.set_closed_below("abc123", 5)
        ...     store.set_closed_below("abc123", 3)  # never moves back
        ...     marks.append(store.closed_below("abc123"))
        ...     store.dispose()
        >>> marks
        [0, 5]
        """
        with self.engine.connect() as conn:
            row = conn.execute(select(collector_state.c.closed_below)
                               .where(collector_state.c.deployment_id == deployment_id)).first()
        return 0 if row is None else int(row[0])

    def set_closed_below(self, deployment_id: str, window: int) -> None:
        """Record that every window before ``window`` holding reports is closed (kept if it is higher already)."""
        stmt = self._insert(collector_state).values(deployment_id=deployment_id, closed_below=window)
        stmt = stmt.on_conflict_do_update(index_elements=[collector_state.c.deployment_id],
                                          set_={"closed_below": stmt.excluded.closed_below},
                                          where=collector_state.c.closed_below < stmt.excluded.closed_below)
        with self.engine.begin() as conn:
            conn.execute(stmt)

    def sensor_activity(self, deployment_id: str, *, first_window: int, since_window: int = 0,
                        n_sensors: int | None = None) -> dict[int, tuple[int, float, int, float]]:
        """Per sensor: (last window reported, when that report arrived, reports since ``first_window``, their sum).

        Only reports of windows from ``since_window`` on are read (sensors with none there are left
        out), all through the slot index: the reports since ``first_window`` (the period) first, then,
        until all ``n_sensors`` are found, the windows ``since_window … first_window - 1`` backwards in
        spans of 16, 32, 64… windows. The cost is bounded by that range, not by the history's length,
        and is small when every sensor reported lately.
        """
        with self.engine.connect() as conn:
            last = {int(s): (int(w), int(n), float(v)) for s, w, n, v in conn.execute(
                _ACTIVITY_RECENT, {"d": deployment_id, "low": max(first_window, since_window)})}
            older = {s: w for s, (w, _, _) in last.items()}
            _last_windows_back(conn, deployment_id, low=since_window, high=first_window, found=older,
                               n_sensors=n_sensors)
            for s, w in older.items():
                last.setdefault(s, (w, 0, 0.0))
            # when each last report arrived: the rows of those few windows, through the slot index
            arrived = {(int(s), int(w)): float(t) for s, w, t in conn.execute(
                _ARRIVED, {"d": deployment_id, "ws": sorted({w for w, _, _ in last.values()})})} if last else {}
        return {s: (w, arrived[(s, w)], n, v) for s, (w, n, v) in sorted(last.items())}

    def last_windows(self, deployment_id: str, *, first_window: int,
                     n_sensors: int | None = None) -> dict[int, int]:
        """Per sensor with a report from window ``first_window`` on: its last window (read from the slot index alone).

        With ``n_sensors`` (the deployment's number of sensors) the windows are read backwards from the
        newest one holding a report, in spans of 16, 32, 64… windows, until all ``n_sensors`` are found or
        ``first_window`` is reached: when every sensor reported lately, the cost is that of the latest
        windows, not of the whole range. Without it, the range is read in one query.

        Examples
        --------
        >>> import tempfile
        >>> from dpcloak.service.examples import two_sensor_store
        >>> with tempfile.TemporaryDirectory() as directory:
        ...     _, store = two_sensor_store(directory)
        ...     _ = store.insert_reports([{"deployment_id": "abc123", "sensor_id": j, "window": w, "value": 1.0,
        ...                                "report_id": f"{j}{w}", "received_at": 60.0 * w}
        ...                               for j, w in [(0, 1), (0, 4), (1, 2), (0, 60)]])
        ...     found = [store.last_windows("abc123", first_window=0), store.last_windows("abc123", first_window=3),
        ...              store.last_windows("abc123", first_window=0, n_sensors=2),
        ...              store.last_windows("abc123", first_window=3, n_sensors=2)]
        ...     store.dispose()
        >>> found
        [{0: 60, 1: 2}, {0: 60}, {0: 60, 1: 2}, {0: 60}]
        """
        with self.engine.connect() as conn:
            if n_sensors is None:
                return {int(s): int(w) for s, w in conn.execute(
                    _ACTIVITY_OLDER, {"d": deployment_id, "low": first_window, "high": _NO_WINDOW})}
            newest = conn.execute(_NEWEST, {"d": deployment_id}).scalar()
            found: dict[int, int] = {}
            if newest is not None:
                _last_windows_back(conn, deployment_id, low=first_window, high=int(newest) + 1, found=found,
                                   n_sensors=n_sensors, open_above=True)
        return found

    def windows_with_reports(self, deployment_id: str, *, first_window: int, last_window: int) -> list[int]:
        """The windows among ``first_window … last_window`` holding at least one report, ascending.

        Reads the index entries of those windows' reports (the (deployment, window, sensor) index).
        """
        if last_window < first_window:
            return []
        with self.engine.connect() as conn:
            return [int(w) for (w,) in conn.execute(_WITH_REPORTS, {"d": deployment_id, "low": first_window,
                                                                    "high": last_window + 1})]

    # --- security events ---------------------------------------------------------------------------------------

    def record_event(self, deployment_id: str, *, sensor: int, generation: int, window: int, kind: str,
                     stored: dict[str, Any], received: dict[str, Any], detected_at: float) -> None:
        """Keep the evidence of a security event (both reports) durably."""
        with self.engine.begin() as conn:
            conn.execute(security_events.insert().values(
                deployment_id=deployment_id, sensor_id=sensor, generation=generation, window=window, kind=kind,
                stored=stored, received=received, detected_at=detected_at))

    def security_events(self, deployment_id: str) -> list[dict[str, Any]]:
        """Every security event of the deployment, oldest first."""
        cols = [security_events.c[name] for name in ("sensor_id", "generation", "window", "kind", "stored",
                                                      "received", "detected_at")]
        stmt = select(*cols).where(security_events.c.deployment_id == deployment_id).order_by(security_events.c.id)
        with self.engine.connect() as conn:
            return [{"sensor": int(s), "generation": int(g), "window": int(w), "kind": k, "stored": a,
                     "received": b, "detected_at": float(t)} for s, g, w, k, a, b, t in conn.execute(stmt)]

    # --- windows -----------------------------------------------------------------------------------------------

    def save_window(self, deployment_id: str, record: WindowRecord) -> bool:
        """Store a closed window once; ``False`` if it was already stored."""
        row = {"deployment_id": deployment_id, **record.__dict__}
        stmt = self._insert(windows).on_conflict_do_nothing().returning(windows.c.window)
        with self.engine.begin() as conn:
            return conn.execute(stmt, row).first() is not None

    def closed_windows(self, deployment_id: str, *, since: int | None = None) -> list[int]:
        """Indices of the closed windows (from window ``since`` on, if given), ascending."""
        where = windows.c.deployment_id == deployment_id
        if since is not None:
            where = where & (windows.c.window >= since)
        stmt = select(windows.c.window).where(where).order_by(windows.c.window)
        with self.engine.connect() as conn:
            return [int(w) for (w,) in conn.execute(stmt)]

    def windows(self, deployment_id: str, *, window: int | None = None) -> Iterator[WindowRecord]:
        """Closed windows (all, or the one given), ascending; read a page at a time (constant memory)."""
        if window is not None:
            yield from self.windows_page(deployment_id, after=window - 1, before=window + 1, limit=1)
            return
        after: int | None = None
        while True:
            page = self.windows_page(deployment_id, after=after, limit=READ_PAGE)
            yield from page
            if len(page) < READ_PAGE:
                return
            after = page[-1].window

    def windows_page(self, deployment_id: str, *, after: int | None = None, before: int | None = None,
                     limit: int, newest: bool = False) -> list[WindowRecord]:
        """Up to ``limit`` closed windows with ``after < window < before`` (either bound optional), ascending.

        The first ``limit`` of that range, or its last ``limit`` with ``newest``; read through the
        windows' primary key, so a page costs its own rows whatever the history's length.

        Examples
        --------
        >>> import tempfile
        >>> from dpcloak.service.examples import two_sensor_store
        >>> with tempfile.TemporaryDirectory() as directory:
        ...     _, store = two_sensor_store(directory, reading=10.0)  # window 0 closed
        ...     pages = [[r.window for r in store.windows_page("abc123", after=a, limit=10)] for a in (None, 0)]
        ...     store.dispose()
        >>> pages
        [[0], []]
        """
        rows = self._window_rows(_PAGE_DOWN if newest else _PAGE_UP, {
            "d": deployment_id, "after": -1 if after is None else after,
            "before": _NO_WINDOW if before is None else before, "n": limit})
        return rows[::-1] if newest else rows

    def windows_closed_after(self, deployment_id: str, cursor: ClosingCursor | None, *,
                             limit: int) -> list[WindowRecord]:
        """Up to ``limit`` windows closed after ``cursor`` (all, from the first, when ``None``), in closing order.

        The closing order is ``(closed_at, window)``, read through its index: what a dashboard polls
        for (the windows closed since its last poll, whichever their index).
        """
        if cursor is None:
            return self._window_rows(_CLOSED_FIRST, {"d": deployment_id, "n": limit})
        return self._window_rows(_CLOSED_AFTER, {"d": deployment_id, "c": float(cursor[0]), "w": int(cursor[1]),
                                                 "n": limit})

    def last_closed(self, deployment_id: str) -> ClosingCursor | None:
        """The closing position ``(closed_at, window)`` of the window closed last; ``None`` before the first."""
        with self.engine.connect() as conn:
            row = conn.execute(_LAST_CLOSED, {"d": deployment_id}).first()
        return None if row is None else (float(row[0]), int(row[1]))

    def window_count(self, deployment_id: str) -> int:
        """Number of closed windows.

        When the database holds no other deployment (the usual case), every row of ``windows`` is this
        deployment's (its foreign key: none without it), and the rows are counted without reading their keys:
        SQLite counts the index's pages' cells (5x faster at 43,200 windows). Both queries read one snapshot.

        Examples
        --------
        >>> import tempfile
        >>> from dpcloak.service.examples import two_sensor_store
        >>> with tempfile.TemporaryDirectory() as directory:
        ...     _, store = two_sensor_store(directory, reading=10.0)  # window 0 closed
        ...     counts = store.window_count("abc123"), store.window_count("another")
        ...     store.dispose()
        >>> counts
        (1, 0)
        """
        with self.engine.connect() as conn:
            alone = conn.execute(_OTHER_DEPLOYMENTS, {"d": deployment_id}).first() is None
            return int(conn.execute(_COUNT_ALL if alone else _COUNT, {"d": deployment_id}).scalar_one())

    def _window_rows(self, stmt: Any, params: dict[str, Any]) -> list[WindowRecord]:
        with self.engine.connect() as conn:
            return [WindowRecord(**{**r._mapping, "outliers": r.outliers or []}) for r in conn.execute(stmt, params)]
