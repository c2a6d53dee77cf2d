r"""A persistent count of privacy-spending releases: one small JSON file, updated atomically and durably.

A budget kept in memory is forgotten when the process restarts, and two privatizer objects built
with the same configuration would each start from zero. :class:`BudgetLedger` keeps the number of
releases charged against one budget in a file, so every object (and every process) that charges the
same budget sees the same count.

Write-ahead rule
----------------
A release is *reserved* in the ledger before it is sampled: :meth:`BudgetLedger.reserve` takes an
exclusive lock (``fcntl.flock`` on ``<path>.lock``), reads the count, lets the caller refuse the new
total, writes the new count to a temporary file, ``fsync``\ s it, renames it over the ledger
(``os.replace``, atomic on POSIX) and ``fsync``\ s the directory, and only then returns. A crash at
any point leaves either the old or the new count on disk; a release that might have left the
device is always counted (a reservation whose release then fails stays spent — the safe direction).

The file records the configuration it counts for (``fingerprint``, a description of the mechanism,
accountant and budget); opening it with a different configuration is refused rather than mixing two
budgets.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from dpcloak.errors import InvalidParameterError

__all__ = ["BudgetLedger"]

_VERSION = 1
T = TypeVar("T")


class BudgetLedger:
    """Releases charged against one budget, persisted in a JSON file (module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file (created with count 0 if missing; its directory must exist).
    fingerprint : str
        Description of what the count is for (mechanism, accountant, budget); an existing file with
        a different fingerprint is refused.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     ledger = BudgetLedger(os.path.join(d, "ledger.json"), fingerprint="laplace eps=0.1, budget 1.0")
    ...     print(ledger.reserve(3, lambda total: total))
    ...     print(ledger.reserve(2, lambda total: total))
    3
    5
    """

    def __init__(self, path: str | os.PathLike[str], *, fingerprint: str) -> None:
        self.path = Path(path)
        self.fingerprint = str(fingerprint)
        if not self.path.parent.is_dir():
            raise InvalidParameterError(f"ledger directory {str(self.path.parent)!r} does not exist")
        with self._locked():
            if not self.path.exists():
                self._write(0)
            else:
                self._read()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.path.with_name(self.path.name + ".lock")
        with open(lock, "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _read(self) -> int:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            count, fingerprint = data["readings"], data["fingerprint"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidParameterError(f"ledger {str(self.path)!r} is unreadable or corrupt ({exc}); "
                                        "refusing to guess how much budget was spent") from None
        if fingerprint != self.fingerprint:
            raise InvalidParameterError(
                f"ledger {str(self.path)!r} counts releases for {fingerprint!r}, not for {self.fingerprint!r}; "
                "use one ledger file per mechanism and budget"
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidParameterError(f"ledger {str(self.path)!r} holds an invalid count {count!r}")
        return count

    def _write(self, count: int) -> None:
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        payload = json.dumps({"version": _VERSION, "fingerprint": self.fingerprint, "readings": count})
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    @property
    def readings(self) -> int:
        """Releases charged so far (read from the file)."""
        with self._locked():
            return self._read()

    def reserve(self, count: int, check: Callable[[int], T]) -> T:
        """Add ``count`` releases durably, unless ``check(new_total)`` raises (then nothing changes).

        ``check`` runs under the lock with the total the ledger would hold; its return value is
        returned once the new total is on disk.
        """
        def add(current: int) -> tuple[int, T]:
            return current + count, check(current + count)

        return self.advance(add)

    def advance(self, step: Callable[[int], tuple[int, T]]) -> T:
        """Replace the count by ``step(current)[0]`` durably (never lower), returning ``step(current)[1]``.

        ``step`` runs under the lock; if it raises, nothing changes. A new count below the current one
        is refused: a ledger only ever grows.
        """
        with self._locked():
            current = self._read()
            total, result = step(current)
            if isinstance(total, bool) or not isinstance(total, int) or total < current:
                raise InvalidParameterError(f"a ledger count only grows: {current} cannot become {total!r}")
            if total != current:
                self._write(total)
            return result

    def __repr__(self) -> str:
        return f"BudgetLedger(path={str(self.path)!r}, fingerprint={self.fingerprint!r})"
