r"""Report authentication: HMAC-SHA256 over a canonical encoding that binds the whole task.

The MAC input is the UTF-8 text ::

    dpcloak-report/v1 \n deployment id \n configuration fingerprint \n sensor \n window \n report id \n value

with integers in decimal and the value as ``float.hex`` (exact: the value a sensor sends is a
multiple of the mechanism's grid step, and the canonical form does not depend on how the JSON
number was printed). Changing any of them — moving a report to another deployment, to a weaker
configuration, to another sensor or window, or reusing its report id — invalidates the MAC.

What it protects: **integrity** (no injected, altered or replayed readings; poisoning needs a
sensor's key). What it does not protect: privacy — a reading is already differentially private
when it leaves the sensor; a collector that can verify MACs also holds the keys (it derives them
from its master key), so a compromised collector can forge reports but learns nothing raw.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["report_message", "sign_report", "verify_report", "KeyedVerifier"]

_PREFIX = "dpcloak-report/v1"


def report_message(*, deployment_id: str, fingerprint: str, sensor: int, window: int, report_id: str,
                   value: float) -> bytes:
    """The canonical bytes a report's MAC covers (module docstring).

    Examples
    --------
    >>> fields = dict(deployment_id="abc123", fingerprint="f1", sensor=0, window=7, report_id="r-1", value=3.5)
    >>> report_message(**fields)
    b'dpcloak-report/v1\\nabc123\\nf1\\n0\\n7\\nr-1\\n0x1.c000000000000p+1'
    """
    return (f"{_PREFIX}\n{deployment_id}\n{fingerprint}\n{int(sensor)}\n{int(window)}\n{report_id}\n"
            f"{float(value).hex()}").encode()


def sign_report(key: bytes, *, deployment_id: str, fingerprint: str, sensor: int, window: int, report_id: str,
                value: float) -> str:
    """Hex HMAC-SHA256 of the report under the sensor's key.

    Examples
    --------
    >>> fields = dict(deployment_id="abc123", fingerprint="f1", sensor=0, window=7, report_id="r-1", value=3.5)
    >>> mac = sign_report(bytes(32), **fields)
    >>> len(mac), verify_report(bytes(32), mac, **fields)
    (64, True)
    """
    msg = report_message(deployment_id=deployment_id, fingerprint=fingerprint, sensor=sensor, window=window,
                         report_id=report_id, value=value)
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def verify_report(key: bytes, mac: str, *, deployment_id: str, fingerprint: str, sensor: int, window: int,
                  report_id: str, value: float) -> bool:
    """Constant-time check of ``mac`` against the report's canonical encoding.

    Examples
    --------
    >>> fields = dict(deployment_id="abc123", fingerprint="f1", sensor=0, window=7, report_id="r-1", value=3.5)
    >>> mac = sign_report(bytes(32), **fields)
    >>> verify_report(bytes(32), mac, **fields)
    True
    >>> verify_report(bytes(32), mac, **{**fields, "value": 35.0})  # a changed value
    False
    >>> verify_report(b"k" * 32, mac, **fields)  # another key
    False
    """
    expected = sign_report(key, deployment_id=deployment_id, fingerprint=fingerprint, sensor=sensor, window=window,
                           report_id=report_id, value=value)
    return hmac.compare_digest(expected, mac.lower())


class KeyedVerifier:
    """:func:`verify_report` for many keys, each keyed once.

    HMAC keying (hashing the padded key) is done once per key here; verifying a report then copies
    the keyed state and hashes only the report's message (about half the cost of :func:`verify_report`).

    Examples
    --------
    >>> fields = dict(deployment_id="abc123", fingerprint="f1", window=7, report_id="r-1", value=3.5)
    >>> keys = [bytes([j]) * 32 for j in range(3)]
    >>> verifier = KeyedVerifier(keys)
    >>> mac = sign_report(keys[1], sensor=1, **fields)
    >>> len(verifier), verifier.verify(1, mac, sensor=1, **fields)
    (3, True)
    >>> verifier.verify(2, mac, sensor=1, **fields)  # another sensor's key
    False
    >>> verifier.verify(1, mac, sensor=1, **{**fields, "value": 3.6})  # another value
    False
    >>> verifier.verify(1, mac, sensor=1, **fields) == verify_report(keys[1], mac, sensor=1, **fields)
    True
    """

    def __init__(self, keys: list[bytes]) -> None:
        self._keyed = [hmac.new(key, digestmod=hashlib.sha256) for key in keys]

    def __len__(self) -> int:
        return len(self._keyed)

    def replace(self, key_index: int, key: bytes) -> None:
        """Use ``key`` for key number ``key_index`` from now on (a re-provisioned sensor's new credential)."""
        self._keyed[key_index] = hmac.new(key, digestmod=hashlib.sha256)

    def verify(self, key_index: int, mac: str, *, deployment_id: str, fingerprint: str, sensor: int, window: int,
               report_id: str, value: float) -> bool:
        """Constant-time check of ``mac`` against the report, under key number ``key_index``."""
        h = self._keyed[key_index].copy()
        h.update(report_message(deployment_id=deployment_id, fingerprint=fingerprint, sensor=sensor, window=window,
                                report_id=report_id, value=value))
        return hmac.compare_digest(h.hexdigest(), mac.lower())
