"""A sensor's persistent budget ledger, with write-ahead semantics.

The collector is untrusted, so the sensor enforces its own budget. Before a private reading can
leave the sensor, the ledger durably records it (SQLite, ``synchronous=FULL``: on disk when the
commit returns) with its window, report id and noisy value. Only then is it sent. Consequences:

* a release that *might* have left — crash after the commit, lost acknowledgement — counts as spent;
* a retry resends the **same** noisy value with the same report id (fresh noise for the same
  reading would leak: two independent noisy copies average the noise down);
* a reading that crashed before the commit never left, and is not counted.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Ledger", "LedgerEntry"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS releases (
    window INTEGER PRIMARY KEY,
    period INTEGER NOT NULL,
    report_id TEXT NOT NULL UNIQUE,
    value REAL NOT NULL,
    mac TEXT NOT NULL,
    created_at REAL NOT NULL,
    acknowledged INTEGER NOT NULL DEFAULT 0
)
"""


@dataclass(frozen=True)
class LedgerEntry:
    """One release recorded by a sensor.

    Examples
    --------
    >>> e = LedgerEntry(window=3, period=0, report_id="r-3", value=1.25, mac="ab", acknowledged=False)
    >>> e.window, e.value, e.acknowledged
    (3, 1.25, False)
    """

    window: int
    period: int
    report_id: str
    value: float
    mac: str
    acknowledged: bool


class Ledger:
    """The releases of one sensor, on disk.

    Parameters
    ----------
    path : path
        SQLite file (created if missing).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> ledger = Ledger(Path(tmp.name) / "ledger.db")
    >>> entry = LedgerEntry(window=0, period=0, report_id="r-0", value=3.5, mac="00", acknowledged=False)
    >>> ledger.record(entry, limit=1), ledger.spent_in_period(0)
    (True, 1)
    >>> ledger.record(LedgerEntry(1, 0, "r-1", 2.0, "00", False), limit=1)  # the period's budget is spent
    False
    >>> [e.window for e in ledger.pending()]
    [0]
    >>> ledger.acknowledge(0)
    >>> ledger.pending(), ledger.entry(0).acknowledged
    ([], True)
    >>> ledger.close()
    >>> tmp.cleanup()
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _entries(self, where: str, args: tuple[object, ...]) -> list[LedgerEntry]:
        with self._lock:
            rows = self._db.execute(f"SELECT window, period, report_id, value, mac, acknowledged FROM releases "
                                    f"WHERE {where} ORDER BY window", args).fetchall()
        return [LedgerEntry(int(w), int(p), r, float(v), m, bool(a)) for w, p, r, v, m, a in rows]

    def entry(self, window: int) -> LedgerEntry | None:
        """The release recorded for ``window``, if any."""
        found = self._entries("window = ?", (window,))
        return found[0] if found else None

    def spent_in_period(self, period: int) -> int:
        """Releases recorded in ``period`` (acknowledged or not: they may have left)."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM releases WHERE period = ?", (period,)).fetchone()[0])

    def record(self, entry: LedgerEntry, *, limit: int) -> bool:
        """Durably record a release unless the period already holds ``limit``; ``False`` if refused.

        The count and the insert happen in one transaction, so concurrent releases cannot overspend.
        """
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                n = self._db.execute("SELECT COUNT(*) FROM releases WHERE period = ?", (entry.period,)).fetchone()[0]
                if n >= limit:
                    self._db.execute("ROLLBACK")
                    return False
                self._db.execute("INSERT INTO releases (window, period, report_id, value, mac, created_at) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", (entry.window, entry.period, entry.report_id,
                                                               entry.value, entry.mac, time.time()))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return True

    def acknowledge(self, window: int) -> None:
        """Mark the release of ``window`` as acknowledged by the collector."""
        with self._lock:
            self._db.execute("UPDATE releases SET acknowledged = 1 WHERE window = ?", (window,))

    def pending(self) -> list[LedgerEntry]:
        """Releases not yet acknowledged (to be resent unchanged)."""
        return self._entries("acknowledged = 0", ())

    def all(self) -> list[LedgerEntry]:
        """Every recorded release."""
        return self._entries("1 = 1", ())
