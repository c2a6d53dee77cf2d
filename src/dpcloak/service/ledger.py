"""A sensor's releases, in the one persistent ledger (:mod:`dpcloak.privacy.ledger`), with write-ahead semantics.

The collector is untrusted, so the sensor enforces its own budget. Before a private reading can
leave the sensor, the ledger durably records it (SQLite, ``synchronous=FULL``: on disk when the
append returns) with its window, report id and noisy value, as an authenticated record of the
sensor's hash chain. Only then is it sent. Consequences:

* a release that *might* have left — crash after the commit, lost acknowledgement — counts as spent;
* a retry resends the **same** noisy value with the same report id (fresh noise for the same
  reading would leak: two independent noisy copies average the noise down);
* a reading that crashed before the commit never left, and is not counted.

Tamper evidence
---------------
The chain's key is derived from the sensor's credential key
(``HMAC(credential key, "dpcloak/service/ledger-key/v1")``) and its genesis binds the deployment,
the configuration fingerprint, the sensor and the credential's generation; the head is also
written to the credential file (its ``"ledger"`` field, the anchor). So a node refuses to start on
a ledger that is edited, truncated, another sensor's or another configuration's, older than its
credential file says, or missing although the credential file records one
(:class:`~dpcloak.errors.LedgerIntegrityError`). The way out is a new credential
(``dpcloak deploy reprovision``), which retires the old one at the collector. Acknowledgements are
unauthenticated marks: they only decide what is resent (unchanged).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.ledger import Anchor, Ledger
from dpcloak.service.config import SensorCredential

__all__ = ["SensorLedger", "LedgerEntry", "ledger_key"]

_LEDGER_KEY_LABEL = b"dpcloak/service/ledger-key/v1"


def ledger_key(credential: SensorCredential) -> bytes:
    """The key of a sensor's ledger chain, derived from its credential key.

    Examples
    --------
    >>> from dpcloak.service.config import SensorCredential
    >>> cred = SensorCredential(deployment_id="abc123", fingerprint="f" * 64, sensor=0, key=bytes(32))
    >>> len(ledger_key(cred)), ledger_key(cred) == cred.key
    (32, False)
    """
    return hmac.digest(credential.key, _LEDGER_KEY_LABEL, "sha256")


@dataclass(frozen=True)
class LedgerEntry:
    """One release recorded by a sensor (``refused``: the collector's error code if it refused it for good;
    ``counter``: with a continual counter, its stream state after this window, hex of
    :meth:`~dpcloak.privacy.continual.PrefixSumStream.to_bytes`, recorded in the same authenticated record as the
    released value, so a crash can neither lose the state of a released window nor release a window twice).

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
    refused: str | None = None
    counter: str | None = None


class _PeriodFull(Exception):
    """The period already holds its limit (raised inside an append: nothing is written)."""


class SensorLedger(Ledger):
    """The releases of one sensor, on disk, authenticated and bound to its credential.

    Parameters
    ----------
    path : path
        The ledger file (created if missing, unless the credential file records a ledger).
    credential : SensorCredential
        The sensor's credential: the ledger's key derives from it, and its file (``credential.path``,
        when it was loaded from one) is the anchor.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from dpcloak.service.config import SensorCredential
    >>> tmp = tempfile.TemporaryDirectory()
    >>> cred = SensorCredential(deployment_id="abc123", fingerprint="f" * 64, sensor=0, key=bytes(32))
    >>> ledger = SensorLedger(Path(tmp.name) / "ledger.db", credential=cred)
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

    def __init__(self, path: Path | str, *, credential: SensorCredential) -> None:
        self.sensor = credential.sensor
        self._entries: dict[int, tuple[int, LedgerEntry]] = {}  # window -> (seq, entry as released)
        self._per_period: dict[int, int] = {}
        self._refused: dict[int, str] = {}  # window -> the collector's error code
        anchor = Anchor(credential.path) if credential.path is not None else None
        remedy = (f"a sensor whose ledger is lost or in doubt needs a new credential: dpcloak deploy reprovision "
                  f"<deployment directory> --sensor {credential.sensor}, then a new ledger file")
        super().__init__(path, key=ledger_key(credential), anchor=anchor, remedy=remedy, binding={
            "purpose": "sensor-node", "deployment_id": credential.deployment_id, "fingerprint": credential.fingerprint,
            "sensor": credential.sensor, "generation": credential.generation})
        self._acked = self.marked()

    def _apply(self, seq: int, kind: str, body: Any) -> None:
        if kind == "refused":
            window = body.get("window") if isinstance(body, dict) else None
            if window not in self._entries or window in self._refused:
                self._refuse(f"record {seq} refuses no release of this ledger")
            self._refused[window] = str(body.get("code"))
            return
        try:
            entry = LedgerEntry(window=int(body["window"]), period=int(body["period"]),
                                report_id=str(body["report_id"]), value=float(body["value"]), mac=str(body["mac"]),
                                acknowledged=False,
                                counter=None if body.get("counter") is None else str(body["counter"]))
        except (KeyError, TypeError, ValueError):
            self._refuse(f"record {seq} is not a release")
        if kind != "release" or entry.window in self._entries:
            self._refuse(f"record {seq} is not a release of a new window")
        self._entries[entry.window] = (seq, entry)
        self._per_period[entry.period] = self._per_period.get(entry.period, 0) + 1

    def _entry(self, seq: int, entry: LedgerEntry) -> LedgerEntry:
        return LedgerEntry(entry.window, entry.period, entry.report_id, entry.value, entry.mac, seq in self._acked,
                           self._refused.get(entry.window), entry.counter)

    def entry(self, window: int) -> LedgerEntry | None:
        """The release recorded for ``window``, if any."""
        found = self._entries.get(int(window))
        return None if found is None else self._entry(*found)

    def spent_in_period(self, period: int) -> int:
        """Releases recorded in ``period`` (acknowledged or not: they may have left)."""
        return self._per_period.get(int(period), 0)

    def record(self, entry: LedgerEntry, *, limit: int) -> bool:
        """Durably record a release unless the period already holds ``limit``; ``False`` if refused.

        The count and the append happen under one write lock, so concurrent releases cannot overspend.

        Raises
        ------
        InvalidParameterError
            The window already has a release.
        """
        def make() -> dict[str, Any]:
            if entry.window in self._entries:
                raise InvalidParameterError(f"sensor {self.sensor} already released a reading for window "
                                            f"{entry.window}", parameter="sensor")
            if self._per_period.get(entry.period, 0) >= limit:
                raise _PeriodFull
            return {"window": entry.window, "period": entry.period, "report_id": entry.report_id,
                    "value": entry.value, "mac": entry.mac,
                    **({} if entry.counter is None else {"counter": entry.counter})}

        try:
            self.append("release", make)
        except _PeriodFull:
            return False
        return True

    def acknowledge(self, window: int) -> None:
        """Mark the release of ``window`` as acknowledged by the collector."""
        found = self._entries.get(int(window))
        if found is not None:
            self.mark(found[0])
            self._acked.add(found[0])

    def refuse(self, window: int, code: str) -> None:
        """Record (authenticated) that the collector refused the release of ``window`` for good (error ``code``).

        The release still counts as spent (it left the sensor); it is no longer pending, so it is not
        resent. Refusing an unknown or already refused window does nothing.
        """
        def make() -> dict[str, Any] | None:
            if int(window) not in self._entries or int(window) in self._refused:
                return None
            return {"window": int(window), "code": str(code)}

        self.append("refused", make)

    def pending(self) -> list[LedgerEntry]:
        """Releases neither acknowledged nor refused (to be resent unchanged), in window order."""
        return [e for e in self.all() if not e.acknowledged and e.refused is None]

    def all(self) -> list[LedgerEntry]:
        """Every recorded release, in window order."""
        return [self._entry(*self._entries[w]) for w in sorted(self._entries)]
