"""The bad-input suite: ≥ 300 bad or edge inputs to every command and the public functions (see ``cases.py``).

Cases run in worker subprocesses (``_worker.py``) under a memory limit (RLIMIT_AS) and a timeout, many cases per
process and two processes at a time. Checked for every case: no traceback, no hang, no NaN or infinity printed
or returned; for a user mistake, exit status 2 and a one-line ``error:`` message naming what the user gave; for
a problem too large for memory, a refusal up front that names the estimate (never a MemoryError).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cases import build_cases

WORKER = Path(__file__).with_name("_worker.py")
MEMORY_LIMIT = 3 * 2**30  # bytes of address space per worker
CASE_TIMEOUT = 30.0  # seconds per case (generous: the CI machine may be loaded)
BATCHES = 2  # one worker per thread: each pays the imports once (6 batches paid them 6 times)
NONFINITE = re.compile(r"(?<![\w.])[-+]?(nan|inf|infinity)(?![\w])", re.IGNORECASE)
COMMANDS = ("demo", "recover", "audit", "sensitivity", "calibrate", "reproduce", "heatmap", "serve", "deploy",
            "sensor", "network")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run_batch(cases: list[dict[str, Any]], directory: Path, index: int) -> dict[str, dict[str, Any]]:
    """Run ``cases`` in workers until each has a result; a worker that dies names the case it died on."""
    results: dict[str, dict[str, Any]] = {}
    pending = list(cases)
    env = {**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "COLUMNS": "200",
           "TERM": "dumb"}
    attempt = 0
    while pending:
        attempt += 1
        batch_file = directory / f"batch-{index}-{attempt}.json"
        batch_file.write_text(json.dumps({"timeout": CASE_TIMEOUT, "cases": pending}), encoding="utf-8")
        budget = CASE_TIMEOUT * len(pending) + 60
        proc = subprocess.Popen([sys.executable, str(WORKER), str(batch_file)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, cwd=directory,
                                preexec_fn=_limit_memory)
        try:
            stdout, stderr = proc.communicate(timeout=budget)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        for line in stdout.splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                results[record["id"]] = record
        pending = [c for c in pending if c["id"] not in results]
        if pending:  # the worker died on the first unreported case
            dead = pending.pop(0)
            results[dead["id"]] = {"id": dead["id"], "status": "crash", "stderr": stderr[-2000:],
                                   "returncode": proc.returncode}
    return results


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], float]:
    directory = tmp_path_factory.mktemp("bad-inputs")
    cases = build_cases(directory)
    start = time.perf_counter()
    batches = [cases[k::BATCHES] for k in range(BATCHES)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(lambda kb: _run_batch(kb[1], directory, kb[0]), enumerate(batches)))
    results = {k: v for part in parts for k, v in part.items()}
    return cases, results, time.perf_counter() - start


def _problems(case: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """What is wrong with one case's result (empty when it behaved)."""
    status = result["status"]
    if status in ("timeout", "crash"):
        return [f"{status} {result.get('stderr', '')[-300:]!r}"]
    if case["kind"] == "api":
        return _api_problems(case, result)
    out, err = result["stdout"], result["stderr"]
    problems = []
    if status == "traceback" or "Traceback (most recent call last)" in out + err:
        problems.append(f"traceback: {err.strip().splitlines()[-1] if err.strip() else ''}")
        return problems
    if "internal error" in err or "MemoryError" in err or "ran out of memory" in err:
        problems.append(f"unexpected failure: {err.strip()}")
    if NONFINITE.search(out):  # an error message may quote the user's own "nan"; results may not
        problems.append(f"NaN/inf in output: {NONFINITE.search(out).group(0)!r}")
    lines = [line for line in err.splitlines() if line.strip()]
    if case["expect"] == "ok" and status != 0:
        problems.append(f"exit {status}, expected 0: {err.strip()[:300]}")
    if case["expect"] == "error" or (case["expect"] == "any" and status != 0):
        if status != 2:
            problems.append(f"exit {status}, expected 2 (a user mistake): {(out + err).strip()[:300]!r}")
        elif len(lines) != 1 or not lines[0].startswith("error:"):
            problems.append(f"expected one line 'error: ...', got {err.strip()[:400]!r}")
        elif case["names"] and not any(n in lines[0] for n in case["names"]):
            problems.append(f"message names none of {case['names']}: {lines[0]!r}")
    return problems


def _api_problems(case: dict[str, Any], result: dict[str, Any]) -> list[str]:
    status = result["status"]
    if status == "exception":
        return [f"{result['type']}: {result['message'][:200]}"]
    if status == "ok":
        if result["nonfinite"]:
            return [f"NaN/inf in the result: {result['repr'][:200]}"]
        if case["expect"] == "error":
            return [f"accepted (expected a clear refusal): {result['repr'][:200]}"]
        return []
    message = result["message"]
    problems = []
    if "\n" in message.strip():
        problems.append(f"message is not one line: {message[:200]!r}")
    if case["expect"] == "error" and case["names"] and not any(n in message for n in case["names"]):
        problems.append(f"message names none of {case['names']}: {message[:200]!r}")
    return problems


def _failures(corpus: Any, category: str | None = None) -> list[str]:
    cases, results, _ = corpus
    failures = []
    for case in cases:
        if category is not None and case["category"] != category:
            continue
        for problem in _problems(case, results[case["id"]]):
            failures.append(f"{case['id']}: {problem}")
    return failures


def test_the_corpus_covers_every_command_and_category(corpus):
    cases, results, seconds = corpus
    assert len(cases) >= 300 and set(results) == {c["id"] for c in cases}
    commands = {c["args"][0] for c in cases if c["kind"] == "cli"}
    assert set(COMMANDS) <= commands
    categories = {c["category"] for c in cases}
    assert {"filesystem", "extreme", "silent", "memory", "vocabulary", "valid"} <= categories
    print(f"{len(cases)} cases in {seconds:.1f} s")


@pytest.mark.parametrize("category", ["filesystem", "extreme", "silent", "memory", "vocabulary", "valid"])
def test_every_case_behaves(corpus, category):
    failures = _failures(corpus, category)
    assert not failures, f"{len(failures)} {category} cases misbehave:\n" + "\n".join(failures)


def test_memory_problems_are_refused_up_front_naming_the_estimate(corpus):
    cases, results, _ = corpus
    for case in cases:
        if case["category"] != "memory":
            continue
        result = results[case["id"]]
        text = result.get("stderr", "") + result.get("message", "")
        assert re.search(r"\d(\.\d+)? ?[KMGTPE]iB", text), f"{case['id']}: no estimate named: {text[:300]!r}"
        assert "available" in text, f"{case['id']}: the available memory is not named: {text[:300]!r}"
