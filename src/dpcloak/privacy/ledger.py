r"""The one persistent ledger: an authenticated, hash-chained, append-only record of releases.

Every count of privacy-spending releases that must survive a restart — a privatizer's or a
:class:`~dpcloak.sensors.SensorNetwork`'s budget (:class:`BudgetLedger`), a sensor node's releases
(:class:`dpcloak.service.ledger.SensorLedger`) — is a :class:`Ledger`: one SQLite file (WAL,
``synchronous=FULL``: a record is on disk when its append returns; a crash leaves the old or the
new state, never a mix) holding a chain of records, each authenticated under a key the file does
not hold.

The chain
---------
Record ``i`` (``i = 0, 1, …``; record 0 is the *genesis*, holding the binding) has a kind, a body
(canonical JSON: sorted keys, no whitespace, UTF-8) and the tag

.. math:: t_i = \mathrm{HMAC\text{-}SHA256}_K(\texttt{dpcloak/ledger/record/v1} \,\|\, 0 \,\|\, i \,\|\, 0
          \,\|\, t_{i-1} \,\|\, \mathrm{kind} \,\|\, 0 \,\|\, \mathrm{body}),\qquad t_{-1} = 0^{32},

with ``i`` in decimal and ``0`` a zero byte. The file also holds the *head*
``(n, h_n)``, :math:`h_n = \mathrm{HMAC}_K(\texttt{dpcloak/ledger/head/v1} \| 0 \| n \| 0 \| t_n)`,
rewritten with every append. The genesis body is the **binding** — what the count is for (the
configuration fingerprint; for a sensor, its deployment, id and credential generation) — and a
random ledger id.

Every open replays the whole chain and refuses (:class:`~dpcloak.errors.LedgerIntegrityError`, a
one-line message naming the file) unless the records are numbered 0…n without a gap, every tag
verifies, the head is ``(n, h_n)`` and the binding is the caller's. An edited, inserted, removed or
reordered record, a head that does not match, a ledger of another configuration or another sensor,
or a file that is not a ledger are refused; so is a ledger created by an older dpcloak (it had no
chain). Whoever lacks ``K`` cannot make a modified file pass.

The anchor
----------
A chain cannot tell that it is a complete, current copy: an older copy of the file is itself a
valid chain. So the head is also written to an **anchor**, a small JSON file kept apart from the
ledger (:class:`Anchor`: a sensor's credential file; a privatizer's key file), after every append: its
new file is written and flushed while the ledger's commit is flushed (the two overlap), and replaces
the anchor once both are on disk, so the anchor is never ahead of the ledger.
An open then also refuses

* a **missing** ledger whose anchor records that one was created (a deleted ledger would restart
  the count at zero);
* a ledger **behind** its anchor (an older copy restored, or records removed from the end), or one
  whose head tag at the anchor's position differs (another ledger, a fork).

The anchor holds :math:`h_m` (the head tag), never a chain tag: chain tags are in the file, head
tags of earlier positions are not, so removing records at the end needs the key or an old copy.

What remains trusted
--------------------
The key (a sensor's credential key; a privatizer's key file) and the code that appends. Someone
who can read the key can write any ledger. Someone who restores *both* the ledger and its anchor
from an old copy (a whole-disk snapshot), or deletes both, is not detected here: a sensor's
collector then sees a second value for a window it already has, or more releases in a period than
the budget allows, and flags the sensor (:mod:`dpcloak.service.collector`); a privatizer outside a
deployment has no such second party. The acknowledgement marks of a sensor's releases
(:meth:`Ledger.mark`) are not authenticated: they only decide what is resent (unchanged, so a
resend is idempotent), never what is counted.

Concurrency: appends take SQLite's write lock (``BEGIN IMMEDIATE``) and first verify and apply the
records other processes appended since, so several processes may share one ledger.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from dpcloak._files import sqlite_owner_only
from dpcloak.errors import InvalidParameterError, LedgerIntegrityError

__all__ = ["Ledger", "Anchor", "BudgetLedger", "record_tag", "head_tag", "canonical_body"]

_RECORD_LABEL = b"dpcloak/ledger/record/v1"
_HEAD_LABEL = b"dpcloak/ledger/head/v1"
_GENESIS = "genesis"
_ZERO = bytes(32)
FORMAT = 2
"""Ledger format (1 was the unauthenticated JSON count and the node's plain SQLite table)."""

T = TypeVar("T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS chain (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, "
    "tag BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS head (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL, "
    "tag BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS marks (seq INTEGER PRIMARY KEY)",
)


def canonical_body(value: Mapping[str, Any]) -> bytes:
    """Canonical JSON bytes of a record body (sorted keys, no whitespace, UTF-8, finite numbers only).

    Examples
    --------
    >>> canonical_body({"window": 3, "value": 1.5, "id": "r"})
    b'{"id":"r","value":1.5,"window":3}'
    """
    return json.dumps(dict(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def record_tag(key: bytes, *, seq: int, previous: bytes, kind: str, body: bytes) -> bytes:
    """The chain tag :math:`t_i` of record ``seq`` (module docstring).

    Examples
    --------
    >>> t0 = record_tag(bytes(32), seq=0, previous=bytes(32), kind="genesis", body=b"{}")
    >>> len(t0), t0 == record_tag(bytes(32), seq=1, previous=bytes(32), kind="genesis", body=b"{}")
    (32, False)
    """
    msg = b"".join((_RECORD_LABEL, b"\0", str(int(seq)).encode(), b"\0", previous, kind.encode(), b"\0", body))
    return hmac.digest(key, msg, "sha256")


def head_tag(key: bytes, *, seq: int, tag: bytes) -> bytes:
    """The head tag :math:`h_n` of a chain whose last record is ``seq`` with chain tag ``tag``.

    Examples
    --------
    >>> h = head_tag(bytes(32), seq=4, tag=bytes(32))
    >>> len(h), h == head_tag(bytes(32), seq=3, tag=bytes(32))
    (32, False)
    """
    return hmac.digest(key, _HEAD_LABEL + b"\0" + str(int(seq)).encode() + b"\0" + tag, "sha256")


def _durable_copy(path: Path, data: Mapping[str, Any]) -> Path:
    """A new file next to ``path`` holding ``data`` (mode 0600), on disk (fsynced) when this returns.

    Its name is unique (two appends of one process may be staged at once, both by the same writer thread)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(dict(data), indent=2, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def _write_json_atomically(path: Path, data: Mapping[str, Any]) -> None:
    """Replace ``path`` by ``data`` (mode 0600; the new file is fsynced before the rename, so a crash leaves the
    old or the new file). The directory is not fsynced: a rename lost in a power cut leaves the older anchor,
    which an open accepts (an anchor may lag its ledger) and brings forward."""
    os.replace(_durable_copy(path, data), path)


class _StagedAnchor:
    """The anchor's next content, written and fsynced by the ledger's writer thread while the ledger's own
    commit is flushed.

    The two flushes (the ledger's WAL, the anchor's new file) overlap instead of following each other;
    the new file replaces the anchor only after both are on disk (:meth:`Ledger.append`), so the anchor
    is never ahead of the ledger and a crash leaves the old or the new anchor, as before. The writer is
    one thread kept for the ledger's life (:meth:`Ledger._writer`): starting a thread per append waited
    for the new thread to be scheduled, milliseconds on a busy machine.
    """

    def __init__(self, anchor: Anchor, value: Mapping[str, Any], writer: ThreadPoolExecutor) -> None:
        self.anchor = anchor
        self.data = anchor._load()
        self.data[anchor.field] = dict(value)
        self._writer = writer
        self._future: Future[Path] | None = None

    def start(self) -> None:
        """Begin writing the new file (once the caller holds this object, so that it can :meth:`discard` it)."""
        self._future = self._writer.submit(_durable_copy, self.anchor.path, self.data)

    def wait(self) -> Path:
        """The new file, on disk (raises what writing it raised)."""
        if self._future is None:
            raise RuntimeError("the staged anchor was never started")
        return self._future.result()

    def discard(self) -> None:
        """Remove the new file (the ledger's commit failed, or a newer head must be written instead)."""
        if self._future is None:  # never started: no file
            return
        with contextlib.suppress(BaseException):
            self.wait().unlink()


class Anchor:
    """A field of a small JSON file, kept apart from a ledger, that remembers the ledger's head.

    Parameters
    ----------
    path : path
        The JSON file (it must exist and hold an object; other fields are kept as they are).
    field : str, default "ledger"
        The field holding ``{"ledger_id", "seq", "head"}``.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "sensor-0.json"
    >>> _ = path.write_text(json.dumps({"sensor": 0}))
    >>> anchor = Anchor(path)
    >>> anchor.read() is None
    True
    >>> anchor.write({"ledger_id": "ab", "seq": 3, "head": "00"})
    >>> anchor.read()["seq"], json.loads(path.read_text())["sensor"]
    (3, 0)
    >>> oct(path.stat().st_mode & 0o777)
    '0o600'
    >>> tmp.cleanup()
    """

    def __init__(self, path: str | os.PathLike[str], *, field: str = "ledger") -> None:
        self.path = Path(path)
        self.field = field

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise LedgerIntegrityError(f"ledger anchor {str(self.path)!r} is not readable JSON ({exc})",
                                       parameter="ledger") from None
        if not isinstance(data, dict):
            raise LedgerIntegrityError(f"ledger anchor {str(self.path)!r} must hold a JSON object", parameter="ledger")
        return data

    def read(self) -> dict[str, Any] | None:
        """The recorded head (``None`` if no ledger was recorded yet)."""
        value = self._load().get(self.field)
        if value is None:
            return None
        if not (isinstance(value, dict) and isinstance(value.get("ledger_id"), str)
                and isinstance(value.get("seq"), int) and not isinstance(value.get("seq"), bool)
                and isinstance(value.get("head"), str)):
            raise LedgerIntegrityError(f"ledger anchor {str(self.path)!r}: field {self.field!r} is malformed",
                                       parameter="ledger")
        return value

    def write(self, value: Mapping[str, Any]) -> None:
        """Record ``value`` durably (atomic replace of the whole file, mode 0600)."""
        data = self._load()
        data[self.field] = dict(value)
        _write_json_atomically(self.path, data)


class Ledger:
    """An authenticated, hash-chained, append-only record in one SQLite file (module docstring).

    Subclasses give the records a meaning by overriding :meth:`_apply`, which folds one verified
    record into the in-memory state (called at open for every record and after every append).

    Parameters
    ----------
    path : path
        The ledger file. Created (mode 0600) if missing — unless ``anchor`` records a ledger.
    key : bytes
        The authentication key (≥ 16 bytes), held outside the file.
    binding : mapping
        What the ledger counts for (JSON values); an existing ledger bound to anything else is refused.
    anchor : Anchor, optional
        Where the head is also remembered (without one, a deleted or restored ledger is not detected).
    remedy : str, default ""
        Appended to the messages of a refused missing or inconsistent ledger (what the user can do).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = Path(tmp.name) / "log.db"
    >>> ledger = Ledger(path, key=b"k" * 32, binding={"purpose": "demo"})
    >>> ledger.append("note", lambda: {"n": 1}), ledger.append("note", lambda: {"n": 2})
    (1, 2)
    >>> [(seq, kind, body) for seq, kind, body in ledger.records()]
    [(1, 'note', {'n': 1}), (2, 'note', {'n': 2})]
    >>> ledger.close()
    >>> Ledger(path, key=b"x" * 32, binding={"purpose": "demo"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.LedgerIntegrityError: ledger '...log.db': record 0 does not verify ...
    >>> tmp.cleanup()
    """

    def __init__(self, path: str | os.PathLike[str], *, key: bytes, binding: Mapping[str, Any],
                 anchor: Anchor | None = None, remedy: str = "") -> None:
        if not isinstance(key, bytes) or len(key) < 16:
            raise InvalidParameterError("ledger key must be at least 16 bytes", parameter="ledger")
        self.path = Path(path)
        self.binding = dict(binding)
        canonical_body(self.binding)  # JSON-able, finite
        self.anchor = anchor
        self.remedy = remedy
        self._key = key
        self._lock = threading.RLock()
        self._anchor_writer: ThreadPoolExecutor | None = None
        self._seq = -1
        self._tag = _ZERO
        self.ledger_id = ""
        recorded = anchor.read() if anchor is not None else None
        if not self.path.exists():
            if recorded is not None:
                self._refuse(f"the file is missing, but {str(anchor.path)!r} records that ledger "  # type: ignore[union-attr]
                             f"{recorded['ledger_id']} was created with {recorded['seq'] + 1} record(s); refusing "
                             "to start the count again from zero")
            if not self.path.parent.is_dir():
                raise InvalidParameterError(f"ledger directory {str(self.path.parent)!r} does not exist",
                                            parameter="ledger")
            with contextlib.suppress(FileExistsError):  # another process may create it at the same time
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        elif self.path.is_dir():
            raise InvalidParameterError(f"ledger {str(self.path)!r} is a directory, not a ledger file",
                                        parameter="ledger")
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
            sqlite_owner_only(self._db)  # a ledger copied in with mode 0644 (and its WAL files) made 0600
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            with self._write():
                tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if tables - {"chain", "head", "marks"}:
                    self._refuse(f"the file holds tables {sorted(tables)}, not a format-{FORMAT} ledger (an "
                                 "older dpcloak's unauthenticated ledger, or another database)")
                for statement in _SCHEMA:
                    self._db.execute(statement)
                if self._db.execute("SELECT COUNT(*) FROM chain").fetchone()[0] == 0:
                    if recorded is not None:
                        self._refuse(f"the file is empty, but {str(anchor.path)!r} records ledger "  # type: ignore[union-attr]
                                     f"{recorded['ledger_id']} with {recorded['seq'] + 1} record(s)")
                    self._insert(_GENESIS, {"binding": self.binding, "format": FORMAT,
                                            "ledger_id": secrets.token_hex(16)})
            self._sync()
        except sqlite3.DatabaseError as exc:
            self._close_quietly()
            raise LedgerIntegrityError(f"ledger {str(self.path)!r} is not a readable ledger ({exc})",
                                       parameter="ledger") from None
        except BaseException:
            self._close_quietly()
            raise
        self._check_anchor(recorded)

    # --- internals -----------------------------------------------------------------------------------------

    def _refuse(self, why: str) -> NoReturn:
        raise LedgerIntegrityError(f"ledger {str(self.path)!r}: {why}" + (f"; {self.remedy}" if self.remedy else ""))

    def _close_quietly(self) -> None:
        with contextlib.suppress(Exception):
            self._db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """A write transaction (SQLite's write lock across processes); rolled back if the body raises."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _insert(self, kind: str, body: Mapping[str, Any]) -> tuple[int, bytes, bytes]:
        """Append one record and move the head (inside a write transaction that has synced)."""
        seq, encoded = self._seq + 1, canonical_body(body)
        tag = record_tag(self._key, seq=seq, previous=self._tag, kind=kind, body=encoded)
        self._db.execute("INSERT INTO chain (seq, kind, body, tag) VALUES (?, ?, ?, ?)",
                         (seq, kind, encoded.decode(), tag))
        self._db.execute("INSERT OR REPLACE INTO head (id, seq, tag) VALUES (0, ?, ?)",
                         (seq, head_tag(self._key, seq=seq, tag=tag)))
        return seq, tag, encoded

    def _sync(self) -> None:
        """Verify and apply the records appended since the last sync (by this or another process)."""
        rows = self._db.execute("SELECT seq, kind, body, tag FROM chain WHERE seq > ? ORDER BY seq",
                                (self._seq,)).fetchall()
        head = self._db.execute("SELECT seq, tag FROM head WHERE id = 0").fetchone()
        seq, tag = self._seq, self._tag
        for row_seq, kind, text, stored in rows:
            if row_seq != seq + 1:
                self._refuse(f"record {seq + 1} is missing (the next record is {row_seq}): the chain was edited")
            if not (isinstance(kind, str) and isinstance(text, str) and isinstance(stored, bytes)):
                self._refuse(f"record {row_seq} is malformed")
            body = text.encode()
            expected = record_tag(self._key, seq=row_seq, previous=tag, kind=kind, body=body)
            if not hmac.compare_digest(expected, stored):
                self._refuse(f"record {row_seq} does not verify (edited, reordered, or written under another "
                             "key: another sensor's or another configuration's ledger)")
            try:
                value = json.loads(text)
            except ValueError:
                self._refuse(f"record {row_seq} is malformed")
            if row_seq == 0:
                self._check_genesis(kind, value)
            else:
                self._apply(row_seq, kind, value)
            seq, tag = row_seq, stored
        self._seq, self._tag = seq, tag
        if head is None or head[0] != seq or not hmac.compare_digest(head_tag(self._key, seq=seq, tag=tag),
                                                                     bytes(head[1])):
            self._refuse(f"its head does not match its last record {seq} (records were removed from the end or "
                         "the head was edited)")

    def _check_genesis(self, kind: str, value: Any) -> None:
        if kind != _GENESIS or not isinstance(value, dict) or value.get("format") != FORMAT:
            self._refuse("record 0 is not a genesis record of this format")
        theirs = value.get("binding")
        if theirs != self.binding:
            if not isinstance(theirs, dict):
                self._refuse("its binding is malformed")
            diff = sorted(k for k in set(theirs) | set(self.binding) if theirs.get(k) != self.binding.get(k))
            self._refuse("it counts releases for " + ", ".join(f"{k}={theirs.get(k)!r}" for k in diff)
                         + ", not for " + ", ".join(f"{k}={self.binding.get(k)!r}" for k in diff)
                         + " (one ledger per configuration and credential)")
        self.ledger_id = str(value.get("ledger_id"))

    def _check_anchor(self, recorded: dict[str, Any] | None) -> None:
        if self.anchor is None:
            return
        if recorded is not None:
            if recorded["ledger_id"] != self.ledger_id:
                self._refuse(f"{str(self.anchor.path)!r} records ledger {recorded['ledger_id']}, this file is ledger "
                             f"{self.ledger_id} (another device's or an older ledger)")
            if recorded["seq"] > self._seq:
                self._refuse(f"{str(self.anchor.path)!r} records {recorded['seq'] + 1} record(s), the file holds "
                             f"{self._seq + 1} (an older copy restored, or records removed)")
            with self._lock:
                row = self._db.execute("SELECT tag FROM chain WHERE seq = ?", (recorded["seq"],)).fetchone()
            expected = head_tag(self._key, seq=recorded["seq"], tag=bytes(row[0])).hex()
            if not hmac.compare_digest(expected, recorded["head"]):
                self._refuse(f"{str(self.anchor.path)!r} records another head at record {recorded['seq']} (a "
                             "different or edited ledger)")
            if recorded["seq"] == self._seq:
                return
        self._update_anchor()

    def _update_anchor(self) -> None:
        """Write the current head to the anchor, under the write lock so that it never moves back."""
        if self.anchor is None:
            return
        with self._write():
            self._sync()
            self.anchor.write({"ledger_id": self.ledger_id, "seq": self._seq,
                               "head": head_tag(self._key, seq=self._seq, tag=self._tag).hex()})

    def _apply(self, seq: int, kind: str, body: Any) -> None:
        """Fold one verified record into the in-memory state (subclasses; the base keeps nothing)."""

    # --- public --------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Verify and apply the records other processes appended since the last call."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._sync()
            finally:
                self._db.execute("COMMIT")

    def append(self, kind: str, make: Callable[[], Mapping[str, Any] | None]) -> int | None:
        """Append a record durably; its body is ``make()``, evaluated under the write lock on the current state.

        If ``make`` raises or returns ``None``, nothing is written (``None`` is returned). Returns the
        record's sequence number once it is on disk.
        """
        if not kind or kind == _GENESIS:
            raise InvalidParameterError(f"record kind must be a non-empty string other than {_GENESIS!r}, got {kind!r}",
                                        parameter="kind", got=kind)
        staged: _StagedAnchor | None = None
        try:
            with self._write():
                self._sync()
                body = make()
                if body is None:
                    return None
                seq, tag, encoded = self._insert(kind, body)
                if self.anchor is not None:  # its new file is flushed while COMMIT flushes the ledger
                    staged = _StagedAnchor(self.anchor, {"ledger_id": self.ledger_id, "seq": seq,
                                                         "head": head_tag(self._key, seq=seq, tag=tag).hex()},
                                           self._writer())
                    staged.start()
        except BaseException:
            if staged is not None:
                staged.discard()
            raise
        # committed: fold it in (as the next sync would), then remember the head outside the file
        self._seq, self._tag = seq, tag
        self._apply(seq, kind, json.loads(encoded))
        if staged is not None:
            self._install_anchor(staged, seq)
        return seq

    def _writer(self) -> ThreadPoolExecutor:
        """The thread writing staged anchors (started at the first append, ended by :meth:`close`)."""
        if self._anchor_writer is None:
            self._anchor_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpcloak-anchor")
        return self._anchor_writer

    def _install_anchor(self, staged: _StagedAnchor, seq: int) -> None:
        """Put the staged head in place, under the write lock so that the anchor never moves back."""
        with self._write():
            self._sync()
            if self._seq == seq:
                os.replace(staged.wait(), staged.anchor.path)
                return
        staged.discard()  # another process appended since: record its newer head instead
        self._update_anchor()

    def records(self) -> list[tuple[int, str, Any]]:
        """Every record after the genesis, verified: ``(seq, kind, body)``."""
        self.refresh()
        with self._lock:
            rows = self._db.execute("SELECT seq, kind, body FROM chain WHERE seq BETWEEN 1 AND ? ORDER BY seq",
                                    (self._seq,)).fetchall()
        return [(int(s), k, json.loads(b)) for s, k, b in rows]

    def mark(self, seq: int) -> None:
        """Mark record ``seq`` (e.g. acknowledged); marks are not authenticated (module docstring)."""
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO marks (seq) VALUES (?)", (int(seq),))

    def marked(self) -> set[int]:
        """The marked records."""
        with self._lock:
            return {int(s) for (s,) in self._db.execute("SELECT seq FROM marks")}

    @property
    def length(self) -> int:
        """Records after the genesis."""
        return self._seq

    def close(self) -> None:
        """Close the file (and end the anchor's writer thread)."""
        with self._lock:
            self._db.close()
            if self._anchor_writer is not None:
                self._anchor_writer.shutdown(wait=True)
                self._anchor_writer = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(path={str(self.path)!r}, binding={self.binding!r})"


class BudgetLedger(Ledger):
    """Releases charged against one budget, in an authenticated ledger whose key lives in ``<path>.key``.

    The key file (mode 0600, created with the ledger) holds the key and the ledger's anchor. A ledger
    without its key file, or a key file whose ledger is missing, behind or edited, is refused.

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file (created with count 0 if neither it nor its key file exists; its directory must exist).
    fingerprint : str
        Description of what the count is for (mechanism, accountant, budget); an existing ledger with
        a different fingerprint is refused.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     ledger = BudgetLedger(os.path.join(d, "budget.ledger"), fingerprint="laplace eps=0.1, budget 1.0")
    ...     print(ledger.reserve(3, lambda total: total), ledger.reserve(2, lambda total: total))
    ...     ledger.close()
    ...     again = BudgetLedger(os.path.join(d, "budget.ledger"), fingerprint="laplace eps=0.1, budget 1.0")
    ...     print(again.readings)
    ...     again.close()
    ...     print(sorted(os.listdir(d)))
    3 5
    5
    ['budget.ledger', 'budget.ledger.key']
    """

    def __init__(self, path: str | os.PathLike[str], *, fingerprint: str) -> None:
        self.fingerprint = str(fingerprint)
        self.readings_total = 0
        path = Path(path)
        key_path = path.with_name(path.name + ".key")
        if not path.parent.is_dir():
            raise InvalidParameterError(f"ledger directory {str(path.parent)!r} does not exist", parameter="ledger")
        if not key_path.exists():
            if path.exists():
                raise LedgerIntegrityError(f"ledger {str(path)!r}: its key file {str(key_path)!r} is missing; "
                                           "refusing to trust a count that cannot be verified", parameter="ledger")
            _create_key_file(key_path)
        try:
            key = bytes.fromhex(json.loads(key_path.read_text(encoding="utf-8"))["key"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LedgerIntegrityError(f"ledger key file {str(key_path)!r} is unreadable or corrupt ({exc})",
                                       parameter="ledger") from None
        super().__init__(path, key=key, binding={"purpose": "budget", "fingerprint": self.fingerprint},
                         anchor=Anchor(key_path))

    def _apply(self, seq: int, kind: str, body: Any) -> None:
        if kind != "charge" or not isinstance(body, dict):
            self._refuse(f"record {seq} is not a charge")
        total = body.get("total")
        if isinstance(total, bool) or not isinstance(total, int) or total < self.readings_total:
            self._refuse(f"record {seq} holds an invalid total {total!r}")
        self.readings_total = total

    @property
    def readings(self) -> int:
        """Releases charged so far (including other processes' charges)."""
        self.refresh()
        return self.readings_total

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

        ``step`` runs under the lock on the current total; if it raises, nothing changes. A new count
        below the current one is refused: a ledger only ever grows.
        """
        out: list[T] = []

        def make() -> dict[str, int] | None:
            current = self.readings_total
            total, result = step(current)
            if isinstance(total, bool) or not isinstance(total, int) or total < current:
                raise InvalidParameterError(f"a ledger count only grows: {current} cannot become {total!r}",
                                            parameter="step", got=total)
            out.append(result)
            return None if total == current else {"count": total - current, "total": total}

        self.append("charge", make)
        return out[0]


def _create_key_file(path: Path) -> None:
    """Create ``path`` with a fresh random key, atomically (a concurrent creator's file is kept)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"key": secrets.token_hex(32), "version": FORMAT}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
