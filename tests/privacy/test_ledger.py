"""The one persistent ledger: authenticated, hash-chained, bound, anchored.

Oracles: an independent replay of the file (``_ledger_oracle``: sqlite3 + hmac from the documented
format), and files copied, edited, truncated, deleted and restored by hand with sqlite3 and shutil —
never the module's own reading of them.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _ledger_oracle import budget_key, budget_total, replay

from dpcloak.errors import InvalidParameterError, LedgerIntegrityError
from dpcloak.privacy.ledger import Anchor, BudgetLedger, Ledger

FP = "test mechanism; budget 2"


def _budget(path: Path, charges: int) -> BudgetLedger:
    ledger = BudgetLedger(path, fingerprint=FP)
    for _ in range(charges):
        ledger.reserve(1, lambda total: total)
    return ledger


def _sql(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    for s in statements:
        db.execute(s)
    db.commit()
    db.close()


def test_the_file_replays_under_the_documented_format(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    _budget(path, 4).close()
    records = replay(path, budget_key(path))  # raises on any tag that does not verify
    assert records[0][0] == "genesis" and records[0][1]["binding"] == {"purpose": "budget", "fingerprint": FP}
    assert [body["total"] for kind, body in records[1:]] == [1, 2, 3, 4]
    assert budget_total(path) == 4
    anchor = json.loads((tmp_path / "b.ledger.key").read_text())["ledger"]
    assert anchor["seq"] == 4 and anchor["ledger_id"] == records[0][1]["ledger_id"]
    assert oct(path.stat().st_mode & 0o777) == oct((tmp_path / "b.ledger.key").stat().st_mode & 0o777) == "0o600"
    # the replay itself catches what the module must refuse (the oracle is not vacuous)
    _sql(path, "UPDATE chain SET body = replace(body, '\"total\":2', '\"total\":1') WHERE seq = 2")
    with pytest.raises(AssertionError, match="record 2 tag"):
        replay(path, budget_key(path))


@pytest.mark.parametrize("edit", [
    "UPDATE chain SET body = replace(body, '\"total\":3', '\"total\":1') WHERE seq = 3",  # lower the count
    "DELETE FROM chain WHERE seq = 2",  # remove a record in the middle
    "DELETE FROM chain WHERE seq = 4",  # remove the last record (truncate)
    "DELETE FROM chain WHERE seq >= 3; UPDATE head SET seq = 2, tag = (SELECT tag FROM chain WHERE seq = 2)",
    "UPDATE chain SET seq = seq + 10 WHERE seq = 4",
    "DELETE FROM head",
    "UPDATE chain SET body = replace(body, 'budget 2', 'budget 9') WHERE seq = 0",  # re-bind
])
def test_an_edited_ledger_is_refused(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "b.ledger"
    _budget(path, 4).close()
    _sql(path, *edit.split("; "))
    with pytest.raises(LedgerIntegrityError, match=r"ledger '.*b\.ledger'"):
        BudgetLedger(path, fingerprint=FP)


def test_a_restored_older_copy_a_deleted_ledger_and_a_lost_key_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    _budget(path, 2).close()
    shutil.copy(path, tmp_path / "old.copy")
    _budget(path, 3).close()  # five charges now
    shutil.copy(tmp_path / "old.copy", path)  # restore the older file (its chain is valid on its own)
    assert budget_total(path) == 2  # the oracle confirms the copy is a valid, older chain
    with pytest.raises(LedgerIntegrityError, match="older copy restored"):
        BudgetLedger(path, fingerprint=FP)
    path.unlink()
    with pytest.raises(LedgerIntegrityError, match="missing"):
        BudgetLedger(path, fingerprint=FP)
    _budget(tmp_path / "c.ledger", 1).close()
    (tmp_path / "c.ledger.key").unlink()
    with pytest.raises(LedgerIntegrityError, match=r"key file .* is missing"):
        BudgetLedger(tmp_path / "c.ledger", fingerprint=FP)


def test_a_foreign_ledger_is_refused(tmp_path: Path) -> None:
    _budget(tmp_path / "a.ledger", 1).close()
    _budget(tmp_path / "b.ledger", 3).close()
    shutil.copy(tmp_path / "b.ledger", tmp_path / "a.ledger")  # another ledger under a's key file
    with pytest.raises(LedgerIntegrityError, match="does not verify"):
        BudgetLedger(tmp_path / "a.ledger", fingerprint=FP)
    _budget(tmp_path / "c.ledger", 1).close()
    with pytest.raises(LedgerIntegrityError, match="counts releases for fingerprint='test mechanism; budget 2', "
                                                   "not for fingerprint='other'"):
        BudgetLedger(tmp_path / "c.ledger", fingerprint="other")
    # a same-key ledger of the same binding but another id (both files swapped together with another anchor)
    key = b"k" * 32
    first = Ledger(tmp_path / "x.db", key=key, binding={"p": 1}, anchor=None)
    first.close()
    (tmp_path / "anchor.json").write_text("{}")
    second = Ledger(tmp_path / "y.db", key=key, binding={"p": 1}, anchor=Anchor(tmp_path / "anchor.json"))
    second.close()
    with pytest.raises(LedgerIntegrityError, match="another device's or an older ledger"):
        Ledger(tmp_path / "x.db", key=key, binding={"p": 1}, anchor=Anchor(tmp_path / "anchor.json"))


def test_an_old_format_ledger_and_non_ledgers_are_refused(tmp_path: Path) -> None:
    old = tmp_path / "node.db"
    _sql(old, "CREATE TABLE releases (window INTEGER PRIMARY KEY, value REAL)")
    with pytest.raises(LedgerIntegrityError, match="older dpcloak"):
        Ledger(old, key=b"k" * 32, binding={})
    with pytest.raises(InvalidParameterError, match="is a directory"):
        Ledger(tmp_path, key=b"k" * 32, binding={})
    with pytest.raises(InvalidParameterError, match="at least 16 bytes"):
        Ledger(tmp_path / "z.db", key=b"short", binding={})


def test_a_crash_between_commit_and_anchor_leaves_an_openable_ledger(tmp_path: Path) -> None:
    """The anchor is written after the commit; one behind the ledger is accepted and brought forward."""
    path = tmp_path / "b.ledger"
    _budget(path, 2).close()
    key_file = tmp_path / "b.ledger.key"
    behind = key_file.read_text()
    _budget(path, 1).close()
    key_file.write_text(behind)  # as if killed after the third commit, before its anchor write
    again = BudgetLedger(path, fingerprint=FP)
    assert again.readings == 3
    again.close()
    assert json.loads(key_file.read_text())["ledger"]["seq"] == 3


def test_the_anchor_is_never_ahead_of_the_committed_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The anchor's new file is flushed while the ledger's commit is (issue 28, throughput), but replaces the
    anchor only once the commit is on disk. Oracle: at every replacement of the key file, a second sqlite3
    connection reads the committed chain, whose last record must be at least the staged anchor's."""
    import os

    path, key_file = tmp_path / "b.ledger", tmp_path / "b.ledger.key"
    ledger = _budget(path, 1)
    real_replace, seen = os.replace, []

    def spy(src: object, dst: object) -> None:
        if Path(str(dst)) == key_file:
            staged = json.loads(Path(str(src)).read_text())["ledger"]["seq"]
            with sqlite3.connect(path) as db:
                committed = db.execute("SELECT MAX(seq) FROM chain").fetchone()[0]
            seen.append((staged, committed))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    for _ in range(5):
        ledger.reserve(1, lambda total: total)
    ledger.close()
    assert all(committed >= staged for staged, committed in seen), seen
    assert [s for s, _ in seen] == [2, 3, 4, 5, 6]
    assert json.loads(key_file.read_text())["ledger"]["seq"] == 6


def test_a_failed_append_leaves_the_anchor_and_no_staged_file(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An append whose transaction fails after the anchor was staged: nothing committed, the anchor unchanged,
    the staged file removed (a weakened version that installed it first would leave the anchor ahead)."""
    import dpcloak.privacy.ledger as module

    path, key_file = tmp_path / "b.ledger", tmp_path / "b.ledger.key"
    ledger = _budget(path, 2)
    before = key_file.read_text()
    real = module._StagedAnchor.start

    def staged_then_fail(self: object) -> None:  # the new file is being written when the commit fails
        real(self)  # type: ignore[arg-type]
        raise OSError("disk full while committing")

    monkeypatch.setattr(module._StagedAnchor, "start", staged_then_fail)
    with pytest.raises(OSError, match="disk full"):
        ledger.reserve(1, lambda total: total)
    monkeypatch.undo()
    assert key_file.read_text() == before and ledger.readings == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.ledger", "b.ledger-shm", "b.ledger-wal", "b.ledger.key"]
    ledger.close()
    assert budget_total(path) == 2


def test_a_failure_between_staging_and_holding_the_anchor_writes_no_file(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure right after the staged anchor is built, before the append holds it (an interrupt there): no new
    anchor file may exist, since nothing could discard it. The weakened version that began writing inside the
    constructor (ae72868's parent) leaves the ``.tmp`` file behind here; its write is waited for first so
    that the outcome does not depend on timing."""
    import dpcloak.privacy.ledger as module

    path, key_file = tmp_path / "b.ledger", tmp_path / "b.ledger.key"
    ledger = _budget(path, 2)
    before = key_file.read_text()
    real = module._StagedAnchor.__init__

    def built_then_fail(self: Any, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        if self._future is not None:  # a constructor that already writes: let it finish
            self._future.result()
        raise KeyboardInterrupt

    monkeypatch.setattr(module._StagedAnchor, "__init__", built_then_fail)
    with pytest.raises(KeyboardInterrupt):
        ledger.reserve(1, lambda total: total)
    monkeypatch.undo()
    assert key_file.read_text() == before and ledger.readings == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.ledger", "b.ledger-shm", "b.ledger-wal", "b.ledger.key"]
    ledger.close()


def test_refused_charges_write_nothing_and_counts_only_grow(tmp_path: Path) -> None:
    ledger = _budget(tmp_path / "b.ledger", 2)

    def refuse(total: int) -> int:
        raise RuntimeError(f"over: {total}")

    with pytest.raises(RuntimeError, match="over: 3"):
        ledger.reserve(1, refuse)
    with pytest.raises(InvalidParameterError, match="only grows"):
        ledger.advance(lambda current: (current - 1, None))
    assert ledger.advance(lambda current: (current, "same")) == "same"  # no change: nothing appended
    ledger.close()
    assert [kind for kind, _ in replay(tmp_path / "b.ledger", budget_key(tmp_path / "b.ledger"))] == \
        ["genesis", "charge", "charge"]
