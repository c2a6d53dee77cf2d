"""``python -m dpcloak …`` processes forked from a parent that has already imported dpcloak's service stack.

The kill tests restart a collector or a sensor node dozens of times; a fresh interpreter spends about 2 s of
CPU importing FastAPI, SQLAlchemy, numpy and scipy before it serves (far more on a loaded machine). A
*zygote* imports them once; each process is then a ``fork()`` of it that runs the very same entry point as
``python -m dpcloak`` (:func:`dpcloak.cli.main` with ``sys.argv`` set), with its own stdin/stdout/stderr,
working directory, environment and open-file limit. What the tests check happens after start-up (storage,
ledgers, acknowledgements, a SIGKILL at any moment), so it is the same process as far as they can tell; the
real ``python -m dpcloak`` start-up keeps its own tests (``tests/cli/test_serve.py``, ``test_server.py``).

The zygote is one process per test process (started at first use, ended at exit). It is single-threaded and
the only one that can wait for its children, so it also delivers the tests' signals: a signal is never sent
to a recycled process id.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

#: What ``dpcloak serve`` and ``dpcloak sensor run`` import lazily (so the forked processes find them loaded).
PRELOAD = ("dpcloak.cli", "dpcloak.cli._common", "dpcloak.cli.serve", "dpcloak.cli.sensor", "uvicorn",
           "dpcloak.service.server", "dpcloak.service.node", "dpcloak.service.collector", "dpcloak.service.windows",
           "dpcloak.service.connections")

_SERVER = r'''
import importlib, json, os, resource, select, signal, socket, sys, traceback

sock = socket.socket(fileno=int(sys.argv[1]))
for name in sys.argv[2:]:
    importlib.import_module(name)
sys.stdout.flush(); sys.stderr.flush()
children = set()


def send(message):
    sock.send(json.dumps(message).encode())


def child(request, fds):
    code = 1
    try:
        sock.close()
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        for fd in set(fds):
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        if request["file_limit"] is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (request["file_limit"], request["file_limit"]))
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets it at start-up
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = request["argv"]
        from dpcloak.cli import main

        main()
        code = 0
    except SystemExit as exc:  # what the interpreter does with it
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


while True:
    ready = select.select([sock], [], [], 0.02)[0]
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        children.discard(pid)
        send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})
    if not ready:
        continue
    data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
    if not data:
        break
    request = json.loads(data)
    if "signal" in request:
        alive = request["pid"] in children
        if alive:
            os.kill(request["pid"], request["signal"])
        send({"signalled": alive})
        continue
    pid = os.fork()
    if pid == 0:
        child(request, fds)
    for fd in fds:
        os.close(fd)
    children.add(pid)
    send({"pid": pid})
'''


class Zygote:
    """The pre-imported parent: :meth:`popen` forks a ``python -m dpcloak`` process from it."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD) -> None:
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(theirs.fileno()), *preload],
                                     pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=dict(os.environ))
        theirs.close()
        self._lock = threading.Lock()
        self._replies: list[dict[str, Any]] = []
        self._exits: dict[int, int] = {}
        self._changed = threading.Condition()
        threading.Thread(target=self._read, name="zygote-reader", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(1 << 16)
            except OSError:
                data = b""
            with self._changed:
                if not data:
                    self._replies.append({"closed": True})
                    self._changed.notify_all()
                    return
                message = json.loads(data)
                if "exit" in message:
                    self._exits[message["exit"]] = message["code"]
                else:
                    self._replies.append(message)
                self._changed.notify_all()

    def _request(self, message: dict[str, Any], fds: list[int] = ()) -> dict[str, Any]:  # type: ignore[assignment]
        with self._lock:
            socket.send_fds(self._sock, [json.dumps(message).encode()], list(fds))
            with self._changed:
                deadline = time.monotonic() + 120
                while not self._replies:
                    if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                        raise RuntimeError(f"the zygote did not answer {message} within 120 s")
                reply = self._replies.pop(0)
        if reply.get("closed"):
            raise RuntimeError(f"the zygote exited with status {self.proc.poll()}")
        return reply

    def returncode(self, pid: int) -> int | None:
        with self._changed:
            return self._exits.get(pid)

    def wait_exit(self, pid: int, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while pid not in self._exits:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._changed.wait(left)
            return self._exits[pid]

    def signal(self, pid: int, sig: int) -> None:
        self._request({"signal": sig, "pid": pid})

    def popen(self, argv: list[str], *, stdin: int | IO[Any] | None = None, stdout: int | IO[Any] | None = None,
              stderr: int | IO[Any] | None = None, cwd: str | Path | None = None, env: dict[str, str] | None = None,
              text: bool = False, file_limit: int | None = None) -> ForkedProcess:
        """Fork ``argv`` (``[sys.executable, "-m", "dpcloak", ...]``); stdin/stdout/stderr as
        :class:`subprocess.Popen` takes them (``None``: this process's, ``subprocess.PIPE``,
        ``subprocess.DEVNULL``, ``subprocess.STDOUT`` for stderr, or an open file)."""
        if list(argv[:3]) != [sys.executable, "-m", "dpcloak"]:
            raise ValueError(f"the zygote runs python -m dpcloak only, not {argv}")
        close: list[int] = []
        ours: dict[str, IO[Any] | None] = {"stdin": None, "stdout": None}
        fds: list[int] = []
        for name, spec, default in (("stdin", stdin, 0), ("stdout", stdout, 1), ("stderr", stderr, 2)):
            if spec is None:
                fds.append(default)
            elif spec == subprocess.DEVNULL:
                fd = os.open(os.devnull, os.O_RDWR)
                fds.append(fd)
                close.append(fd)
            elif spec == subprocess.STDOUT:
                fds.append(fds[1])
            elif spec == subprocess.PIPE:
                r, w = os.pipe()
                theirs, mine = (r, w) if name == "stdin" else (w, r)
                fds.append(theirs)
                close.append(theirs)
                mode = ("w" if name == "stdin" else "r") + ("" if text else "b")
                kwargs: dict[str, Any] = {"encoding": "utf-8"} if text else {"buffering": 0}
                ours[name] = open(mine, mode, **kwargs)  # noqa: SIM115 (the caller's end of the pipe)
            else:
                fds.append(spec if isinstance(spec, int) else spec.fileno())
        try:
            reply = self._request({"argv": ["dpcloak", *argv[3:]], "cwd": str(cwd or os.getcwd()),
                                   "env": dict(os.environ if env is None else env), "file_limit": file_limit}, fds)
        finally:
            for fd in close:
                os.close(fd)
        return ForkedProcess(self, int(reply["pid"]), argv, ours["stdin"], ours["stdout"])

    def close(self) -> None:
        self._sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ForkedProcess:
    """A forked ``dpcloak`` process with the part of :class:`subprocess.Popen`'s interface the tests use."""

    def __init__(self, zygote: Zygote, pid: int, args: list[str], stdin: IO[Any] | None,
                 stdout: IO[Any] | None) -> None:
        self.zygote, self.pid, self.args, self.stdin, self.stdout = zygote, pid, args, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.zygote.wait_exit(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            self.zygote.signal(self.pid, sig)

    def terminate(self) -> None:
        import signal

        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        import signal

        self.send_signal(signal.SIGKILL)


_ZYGOTE: Zygote | None = None
_START = threading.Lock()


def zygote() -> Zygote:
    """This test process's zygote, started at first use."""
    global _ZYGOTE
    with _START:
        if _ZYGOTE is None or _ZYGOTE.proc.poll() is not None:
            _ZYGOTE = Zygote()
            atexit.register(_ZYGOTE.close)
        return _ZYGOTE
