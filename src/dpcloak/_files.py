"""Files only their owner may read: the collector's database, the sensors' ledgers, the keys.

SQLite creates a database with the process's umask (usually 0644) and gives its ``-wal`` and ``-shm``
files the database's mode. :func:`sqlite_owner_only` takes group and other permissions away from the
database (and those files, when they exist) right after it is opened, before anything is written, so
every file of it is 0600 from its first byte of content on.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Any

__all__ = ["owner_only", "sqlite_owner_only"]

log = logging.getLogger("dpcloak")


def owner_only(path: Path | str, *, warn: bool = True) -> bool:
    """Take every permission of group and others away from ``path`` (``0644`` becomes ``0600``).

    Returns whether the mode changed (a missing file is left alone: ``False``); with ``warn``, a change
    is logged (a secret that was readable by others may have been read).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> secret = Path(tmp.name) / "collector.key"
    >>> _ = secret.write_text("00")
    >>> secret.chmod(0o644)
    >>> owner_only(secret), oct(secret.stat().st_mode & 0o777), owner_only(secret)
    (True, '0o600', False)
    >>> tmp.cleanup()
    """
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return False
    if not mode & 0o077:
        return False
    os.chmod(path, mode & 0o700)
    if warn:
        log.warning("%s was readable by group or others (mode %o): now %o", path, mode, mode & 0o700)
    return True


def sqlite_owner_only(connection: Any) -> None:
    """:func:`owner_only` for the main database file of an open ``sqlite3`` connection and its WAL files
    (silently for a database just created: SQLite made it with the umask's mode, still empty)."""
    for _, name, filename in connection.execute("PRAGMA database_list").fetchall():
        if name == "main" and filename:
            new = os.path.getsize(filename) == 0
            for suffix in ("", "-wal", "-shm", "-journal"):
                owner_only(filename + suffix, warn=not new)
