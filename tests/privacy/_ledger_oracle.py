"""An independent replay of a dpcloak ledger file: sqlite3 + hmac + json, written from the documented format.

Not the code under test: it reads the tables and recomputes every tag from the formula in the
docstring of :mod:`dpcloak.privacy.ledger`, so a test can check what is on disk without trusting
the module that wrote it.
"""

from __future__ import annotations

import hmac
import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any


def _tag(key: bytes, seq: int, previous: bytes, kind: str, body: bytes) -> bytes:
    msg = b"dpcloak/ledger/record/v1" + b"\0" + str(seq).encode() + b"\0" + previous + kind.encode() + b"\0" + body
    return hmac.new(key, msg, "sha256").digest()


def _head(key: bytes, seq: int, tag: bytes) -> bytes:
    return hmac.new(key, b"dpcloak/ledger/head/v1" + b"\0" + str(seq).encode() + b"\0" + tag, "sha256").digest()


def replay(path: Path, key: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Every record ``(kind, body)`` of the ledger at ``path``, genesis first; AssertionError if any tag fails."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT seq, kind, body, tag FROM chain ORDER BY seq").fetchall()
        head = db.execute("SELECT seq, tag FROM head").fetchone()
    finally:
        db.close()
    previous, out = bytes(32), []
    for i, (seq, kind, body, tag) in enumerate(rows):
        assert seq == i, f"record {i} missing"
        encoded = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert encoded == body.encode(), f"record {i} is not canonical JSON"
        assert hmac.compare_digest(_tag(key, seq, previous, kind, body.encode()), tag), f"record {i} tag"
        previous = tag
        out.append((kind, json.loads(body)))
    assert head == (len(rows) - 1, _head(key, len(rows) - 1, previous)), "head"
    return out


def budget_key(path: Path) -> bytes:
    """The key of a budget ledger, from its key file ``<path>.key``."""
    return bytes.fromhex(json.loads(Path(str(path) + ".key").read_text())["key"])


def budget_total(path: Path) -> int:
    """The count of a budget ledger, replayed: the total of its last charge record (0 without any)."""
    records = replay(path, budget_key(path))
    charges = [body["total"] for kind, body in records if kind == "charge"]
    assert all(b > a for a, b in itertools.pairwise(charges)), "totals only grow"
    return charges[-1] if charges else 0
