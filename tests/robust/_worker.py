"""Worker of the bad-input suite: runs a batch of cases in one process and reports one JSON line per case.

Usage: ``python _worker.py CASES.json``. Each case is ``{"id", "kind": "cli", "args": [...]}`` (the dpcloak
command line, run in-process through the same entry point as the console script) or ``{"id", "kind": "api",
"code": "..."}`` (Python that may set ``result``). The parent sets the memory limit (RLIMIT_AS) and the
overall timeout; each case also gets its own alarm so that one hang is reported as that case's hang. A
result line is flushed before the next case starts, so a crash or a kill still names the case it hit.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import sys
import time
import traceback
from typing import Any


class CaseTimeout(BaseException):
    """Raised by the per-case alarm (a BaseException, so library code cannot swallow it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout


def _nonfinite(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds a NaN or an infinity (floats, numpy arrays, containers, dataclass fields)."""
    import numpy as np

    if depth > 4:
        return False
    if isinstance(value, bool | int | str | bytes) or value is None:
        return False
    if isinstance(value, float | np.floating):
        return not math.isfinite(float(value))
    if isinstance(value, np.ndarray):
        return bool(np.issubdtype(value.dtype, np.floating) and value.size and not np.all(np.isfinite(value)))
    if isinstance(value, dict):
        return any(_nonfinite(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_nonfinite(v, depth + 1) for v in value[:1000])
    if hasattr(value, "__dataclass_fields__"):
        return any(_nonfinite(getattr(value, f, None), depth + 1) for f in value.__dataclass_fields__)
    return False


def run_cli(args: list[str]) -> dict[str, Any]:
    import typer

    from dpcloak.cli import app

    out, err = io.StringIO(), io.StringIO()
    status: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            typer.main.get_command(app).main(args, prog_name="dpcloak")
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except CaseTimeout:
            raise
        except BaseException:
            traceback.print_exc()
            status = "traceback"
    return {"status": status, "stdout": out.getvalue()[-4000:], "stderr": err.getvalue()[-4000:]}


def run_api(code: str) -> dict[str, Any]:
    from dpcloak.errors import DpcloakError

    namespace: dict[str, Any] = {}
    try:
        exec(compile(code, "<case>", "exec"), namespace)
    except CaseTimeout:
        raise
    except DpcloakError as exc:
        return {"status": "error", "type": type(exc).__name__, "message": str(exc)}
    except BaseException as exc:
        return {"status": "exception", "type": type(exc).__name__, "message": str(exc)[:500],
                "traceback": traceback.format_exc()[-2000:]}
    result = namespace.get("result")
    return {"status": "ok", "nonfinite": _nonfinite(result), "repr": repr(result)[:300]}


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        batch = json.load(fh)
    signal.signal(signal.SIGALRM, _alarm)
    os.environ.setdefault("COLUMNS", "200")
    for case in batch["cases"]:
        signal.setitimer(signal.ITIMER_REAL, float(case.get("timeout", batch["timeout"])))
        start = time.perf_counter()
        try:
            record = run_cli(case["args"]) if case["kind"] == "cli" else run_api(case["code"])
        except CaseTimeout:
            record = {"status": "timeout"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        record["id"] = case["id"]
        record["seconds"] = round(time.perf_counter() - start, 3)
        sys.__stdout__.write(json.dumps(record) + "\n")
        sys.__stdout__.flush()


if __name__ == "__main__":
    main()
