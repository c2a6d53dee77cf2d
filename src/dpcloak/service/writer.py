"""Group commit: concurrent acknowledgements share one transaction (one fsync) without weakening durability.

Requests put their rows on a queue and wait; one writer task takes everything queued, inserts it
in one transaction on a dedicated thread and only then resolves the waiting requests. A report is
acknowledged after the commit that holds it returned, so "acknowledged" still means "on disk",
while N concurrent requests cost one fsync instead of N.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dpcloak.service.store import Slot, Store

__all__ = ["GroupWriter"]

_MAX_ROWS = 5000


class GroupWriter:
    """Batches report inserts from concurrent requests into single transactions.

    Examples
    --------
    Concurrent submissions are committed together; each caller gets the (sensor, window) slots its reports
    newly filled (a report for a taken slot stores nothing):

    >>> import asyncio
    >>> import tempfile
    >>> from dpcloak.service.examples import two_sensor_store
    >>> tmp = tempfile.TemporaryDirectory()
    >>> deployment, store = two_sensor_store(tmp.name)
    >>> row = {"deployment_id": "abc123", "sensor_id": 0, "window": 0, "report_id": "r-0", "value": 1.0,
    ...        "mac": "00", "received_at": 30.0}
    >>> async def main():
    ...     writer = GroupWriter(store)
    ...     writer.start()
    ...     first, again = await asyncio.gather(writer.submit([row]), writer.submit([dict(row)]))
    ...     await writer.stop()
    ...     return first, again
    >>> asyncio.run(main())
    ({(0, 0)}, set())
    >>> store.report_counts("abc123")
    {0: 1}
    >>> store.dispose()
    >>> tmp.cleanup()
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._queue: asyncio.Queue[tuple[list[dict[str, Any]], asyncio.Future[set[Slot]]]] = asyncio.Queue()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpcloak-writer")
        self._task: asyncio.Task[None] | None = None
        self.pending_rows = 0
        """Rows queued or being committed (the collector refuses new work with 503 above a limit)."""

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._thread.shutdown(wait=True)

    def submit(self, rows: list[dict[str, Any]]) -> asyncio.Future[set[Slot]]:
        """Queue rows now (synchronously); once committed, the future gives the slots these rows filled.

        A slot is attributed to the first queued row for it, so two concurrent copies of one report
        get one "stored" and one conflict (answered as a duplicate).
        """
        fut: asyncio.Future[set[Slot]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((rows, fut))
        self.pending_rows += len(rows)
        return fut

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            size = len(batch[0][0])
            while not self._queue.empty() and size < _MAX_ROWS:
                batch.append(self._queue.get_nowait())
                size += len(batch[-1][0])
            rows = [row for item, _ in batch for row in item]
            try:
                new = await loop.run_in_executor(self._thread, self.store.insert_reports, rows)
            except Exception as exc:  # the database failed: every waiting request fails, none is acknowledged
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            finally:
                self.pending_rows -= len(rows)
            for item, fut in batch:  # each new slot goes to the first row for it (one 201 per stored row)
                mine = {(row["sensor_id"], row["window"]) for row in item} & new
                new -= mine
                if not fut.done():
                    fut.set_result(mine)
