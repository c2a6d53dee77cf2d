"""Connections that send nothing do not take the collector's file descriptors from those that do.

uvicorn closes a keep-alive connection a few seconds after its last response, but a connection that
never sends a request (or never finishes its request line and headers) is never timed out: about
1,000 idle TCP connections take every file descriptor of a process at the common limit of 1,024 and
``accept()`` then fails for every honest sensor. :class:`BoundedHttpProtocol` bounds both:

* **idle time**: a connection with no request in progress — just opened, or after its last response —
  is closed :data:`IDLE_SECONDS` after that moment (a request whose line and headers have arrived is
  "in progress" and is never cut);
* **count**: when the open connections reach :func:`connection_cap` (the process's file limit less a
  reserve for the database, the recovery process and the logs), each new connection closes the
  longest-idle connection that has no request in progress. An honest client that connects and sends
  its request at once is in progress before the next connection arrives, so a flood of idle
  connections evicts its own members, not honest requests.

:func:`raise_file_limit` lifts the soft file limit to the hard one at start-up (the only change a
process may make without privileges), which is what the cap is computed from.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["IDLE_SECONDS", "FD_RESERVE", "BoundedHttpProtocol", "connection_cap", "raise_file_limit"]

IDLE_SECONDS = 10.0
"""A connection with no request in progress is closed this long after it opened or after its last response."""

FD_RESERVE = 128
"""File descriptors kept free of client connections: database files and connections, the recovery process's
pipes, logs, the listening socket."""


def raise_file_limit() -> int:
    """Raise the soft limit on open files to the hard limit; returns the soft limit now in force.

    Examples
    --------
    >>> soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    >>> raise_file_limit() == (hard if hard != resource.RLIM_INFINITY else soft) or soft > 0
    True
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # a platform that refuses it: keep the soft limit
            pass
    return soft


def connection_cap() -> int:
    """The most client connections kept open at once: the soft file limit less :data:`FD_RESERVE` (at least 16).

    Examples
    --------
    >>> soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    >>> connection_cap() == max(16, soft - FD_RESERVE)
    True
    """
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(16, int(soft) - FD_RESERVE)


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol with idle connections timed out and evicted (module docstring).

    It is uvicorn's httptools protocol (the parser in C; ``uvicorn[standard]`` installs it and uvicorn
    itself picks it by default): the pure-Python h11 protocol costs about twice its CPU per request. One
    idle timer per connection, re-armed only when it fires (not at every response): a connection idle
    for :data:`IDLE_SECONDS` is then closed, any other is looked at again when it could have been idle
    that long.

    Pass the class as ``uvicorn.Config(..., http=BoundedHttpProtocol)``.

    Examples
    --------
    >>> import uvicorn
    >>> config = uvicorn.Config(lambda scope, receive, send: None, http=BoundedHttpProtocol)
    >>> config.load()
    >>> config.http_protocol_class is BoundedHttpProtocol
    True
    """

    cap: int | None = None
    """The connection cap of this process (:func:`connection_cap`, computed at the first connection)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._idle_since = self.loop.time()
        self._idle_timer: asyncio.TimerHandle | None = self.loop.call_later(IDLE_SECONDS, self._close_if_idle)
        if BoundedHttpProtocol.cap is None:
            BoundedHttpProtocol.cap = connection_cap()
        if len(self.connections) > BoundedHttpProtocol.cap:
            self._evict_one()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._idle_since = self.loop.time()

    def _in_progress(self) -> bool:
        """A request's line and headers have arrived and its response is not complete."""
        return self.cycle is not None and not self.cycle.response_complete

    def _close_if_idle(self) -> None:
        self._idle_timer = None
        if self.transport.is_closing():
            return
        if self._in_progress():  # idle from its response on, at the earliest
            self._idle_timer = self.loop.call_later(IDLE_SECONDS, self._close_if_idle)
        elif self.loop.time() - self._idle_since >= IDLE_SECONDS:
            self.transport.close()
        else:
            self._idle_timer = self.loop.call_at(self._idle_since + IDLE_SECONDS, self._close_if_idle)

    def _evict_one(self) -> None:
        """Close the longest-idle connection without a request in progress (this one if it is the only one)."""
        idle: list[Any] = [c for c in self.connections
                           if isinstance(c, BoundedHttpProtocol) and not c._in_progress()
                           and not c.transport.is_closing()]
        if idle:
            min(idle, key=lambda c: c._idle_since).transport.close()
