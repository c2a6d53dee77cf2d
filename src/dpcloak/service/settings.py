"""How one collector process is run: the deployment directory, the database and the service's limits, in one object.

``dpcloak serve`` builds a :class:`Settings` from its options, :func:`~dpcloak.service.server.build_app`
builds the collector and its app from it, and the app keeps it (``app.state.settings``) for its routes'
dependencies; nothing else is threaded through the layers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dpcloak._validation import check_int, check_real

__all__ = ["Settings", "DEFAULT_DB"]

DEFAULT_DB = "collector.db"
"""The SQLite database file in the deployment directory, unless a database URL is given."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """One collector's settings, validated.

    Parameters
    ----------
    directory
        The deployment directory (``dpcloak deploy init``).
    db_url
        SQLAlchemy database URL; ``None``: SQLite ``collector.db`` in ``directory``.
    max_pending
        Reports waiting for the database before new ones get 503 (``>= 1``).
    close_interval
        Seconds between two looks for windows to close (``> 0``, at most 60).
    check_database
        Reach and migrate the database when the app is built, and refuse a database without the
        deployment's history (:func:`~dpcloak.service.server.check_history`).
    new_history
        Start a new history in a database that does not hold the deployment's.
    clock
        The collector's time: the wall clock unless a demo runs faster.

    Examples
    --------
    >>> settings = Settings(directory=Path("site"))
    >>> settings.database_url.endswith("/site/collector.db"), settings.max_pending
    (True, 20000)
    >>> Settings(directory=Path("site"), max_pending=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: max_pending must be ... got 0...
    """

    directory: Path
    db_url: str | None = None
    max_pending: int = 20_000
    close_interval: float = 0.25
    check_database: bool = False
    new_history: bool = False
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "directory", Path(self.directory))
        check_int("max_pending", self.max_pending, minimum=1)
        check_real("close_interval", self.close_interval, low=0.0, high=60.0, high_inclusive=True)

    @property
    def database_url(self) -> str:
        """``db_url``, or the SQLite file :data:`DEFAULT_DB` in the deployment directory."""
        from dpcloak.service.store import sqlite_url

        return self.db_url or sqlite_url(self.directory / DEFAULT_DB)
