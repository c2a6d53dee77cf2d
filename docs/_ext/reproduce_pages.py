"""Run every ``dpcloak reproduce`` experiment at build time and write one page per experiment.

Nothing on these pages is pasted: at ``config-inited`` each registered experiment is run (the
``--quick`` sweep by default, ``DPCLOAK_DOCS_REPRODUCE=full`` for the papers' sweeps) through
:func:`dpcloak.experiments.run_experiment`, and ``reproduce/<id>.md`` is written from the run:
its claim / measured / verdict table, the experiment's notes and sweep, and its figure.

Runs are cached in ``docs/_cache/reproduce/`` under a key hashing every source file of the
``dpcloak`` package, this file, the mode and the seed, so an unchanged tree rebuilds without
running anything and any change to the library reruns every experiment. A failing experiment
is a Sphinx warning, so ``-W`` fails the build.

Judging quick runs: a quick sweep has fewer points and trials than the paper's. An experiment is
*deterministic* when the paper's sweep has one trial per point and its first point, run with two
different seeds, gives the same results (timings aside): then a verdict on the points computed
stands — one counterexample refutes a closed form. Every other experiment is statistical: its quick
run has fewer trials (or fewer Monte Carlo samples, or a single noisy draw) than the claims need, so
its verdicts are shown as "too small to judge", with what the tiny sweep gave in parentheses.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SEED = 0
PAGES = "reproduce"
CACHE = Path("_cache") / "reproduce"
TOO_SMALL = "too small to judge"


def _mode() -> str:
    mode = os.environ.get("DPCLOAK_DOCS_REPRODUCE", "quick").strip().lower()
    if mode not in ("quick", "full"):
        raise ValueError(f"DPCLOAK_DOCS_REPRODUCE must be 'quick' or 'full', got {mode!r}")
    return mode


def source_key(package_dir: Path, mode: str) -> str:
    """Hash of every ``.py`` file of the package (path and content), this extension, the mode and the seed."""
    digest = hashlib.sha256(f"{mode}\0{SEED}\0".encode())
    for path in sorted(package_dir.rglob("*.py")):
        digest.update(str(path.relative_to(package_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(HERE.read_bytes())
    return digest.hexdigest()[:16]


def judged(verdict: str, *, quick: bool, statistical: bool) -> str:
    """The verdict shown on the page (see the module docstring for the rule)."""
    if not quick or not statistical or verdict == "not applicable":
        return verdict
    return f"{TOO_SMALL} (quick sweep: {verdict})"


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    try:
        x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return bool(a == b)
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-9, atol=0.0, equal_nan=True))


def deterministic(experiment: Any) -> bool:
    """One trial per point in the paper's sweep, and the first quick point's results do not depend on the seed."""
    import numpy as np

    from dpcloak.errors import DpcloakError

    if experiment.trials > 1:
        return False
    params = dict(experiment.quick_sweep[0])
    try:
        first, second = (experiment.trial(params, np.random.default_rng(seed)) for seed in (1, 2))
    except DpcloakError:
        return False
    keys = [k for k in first if "time" not in k and "elapsed" not in k]
    return set(first) == set(second) and all(_same(first[k], second[k]) for k in keys)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("$", "\\$")


def _run(experiment: Any, out: Path, *, quick: bool) -> dict[str, Any]:
    """Run one experiment into ``out`` and return what the page needs (also written to ``run.json``)."""
    from dpcloak.experiments import run_experiment

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    result = run_experiment(experiment, quick=quick, seed=SEED, workers=1, out=tmp, progress=False)
    report = (tmp / "report.md").read_text()
    sections = {part.split("\n", 1)[0].strip(): part.split("\n", 1)[1].strip()
                for part in report.split("\n## ")[1:] if "\n" in part}
    record = {
        "claims": [[c.claim, c.measured, c.verdict] for c in result.claims],
        "trials": result.trials,
        "points": len(experiment.quick_sweep if quick else experiment.sweep),
        "rows": len(result.rows),
        "failed": result.n_failed,
        "elapsed": result.elapsed,
        "notes": sections.get("Notes", ""),
        "sweep": sections.get("Sweep", ""),
        "deterministic": deterministic(experiment),
    }
    (tmp / "run.json").write_text(json.dumps(record))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return record


def _page(experiment: Any, record: dict[str, Any], *, quick: bool) -> str:
    statistical = not record["deterministic"]
    full_points, full_trials = len(experiment.sweep), experiment.trials
    size = (f"{record['points']} of the paper sweep's {full_points} points × {record['trials']} of {full_trials} "
            f"trials per point" if quick else f"the full sweep: {full_points} points × {full_trials} trials per point")
    lines = [
        f"# {experiment.id}: {experiment.title}",
        "",
        f"**Reproduces:** {experiment.source}.",
        "",
        f"**This page's run** (executed when the documentation was built, seed {SEED}): {size}; "
        f"{record['rows']} trials ({record['failed']} failed) in {record['elapsed']:.1f} s. "
        f"Run the full sweep with `dpcloak reproduce {experiment.id}` (writes `data.csv`, `figure.png`, "
        f"`report.md`).",
        "",
    ]
    if quick and statistical:
        lines += [":::{note}", f"This experiment is statistical (its results depend on the random draws) and the "
                  f"quick sweep ({record['trials']} trial(s) per point, fewer points) is too small to judge claims "
                  f"made over the paper's sweep ({full_trials} trial(s) per point): every verdict below reads "
                  f"*{TOO_SMALL}*, with what the tiny sweep gave in parentheses. The full run judges them.", ":::",
                  ""]
    elif quick:
        lines += [":::{note}", "Each trial is a deterministic computation (the same results under two seeds), so "
                  "the verdicts below are judgements on the points computed — a counterexample at one point "
                  "refutes a closed form; the full sweep adds points.", ":::", ""]
    lines += ["## Claims", "", "| claim (paper) | measured (this run) | verdict |", "|---|---|---|"]
    for claim, measured, verdict in record["claims"]:
        shown = judged(verdict, quick=quick, statistical=statistical)
        lines.append(f"| {_cell(claim)} | {_cell(measured)} | **{_cell(shown)}** |")
    lines += ["", "## Figure", "", f"![{experiment.id}: figure of this run]({experiment.id}.png)", ""]
    if record["notes"]:
        lines += ["## Notes", "", record["notes"].replace("$", "\\$"), ""]
    if record["sweep"]:
        lines += ["## Sweep of this run", "", record["sweep"], ""]
    lines += [f"Data of this run: {{download}}`{experiment.id}.csv`.", ""]
    return "\n".join(lines)


def _index(entries: list[tuple[Any, dict[str, Any]]], *, quick: bool) -> str:
    lines = [
        "# Reproducing the papers",
        "",
        "Every experiment of `dpcloak reproduce --list`, **run when this site was built** — the tables and "
        "figures below come from that run, not from a paste. "
        + ("The build uses each experiment's quick sweep (seconds each); for statistical experiments (several "
           "trials per point, Monte Carlo estimates, single noisy draws) a quick sweep is too small to judge the "
           "paper's claims and its pages say so; deterministic computations are judged on the points computed. "
           "`dpcloak reproduce ID` runs the paper's sweep." if quick else
           "The build ran the papers' full sweeps (`DPCLOAK_DOCS_REPRODUCE=full`)."),
        "",
        "| experiment | reproduces | confirmed | not confirmed | partly | not applicable | too small to judge |",
        "|---|---|---|---|---|---|---|",
    ]
    for experiment, record in entries:
        statistical = not record["deterministic"]
        shown = [judged(v, quick=quick, statistical=statistical) for _, _, v in record["claims"]]
        counts = [sum(1 for s in shown if s == v) for v in ("confirmed", "not confirmed", "partly", "not applicable")]
        counts.append(sum(1 for s in shown if s.startswith(TOO_SMALL)))
        lines.append(f"| [{experiment.id}]({experiment.id}.md) | {_cell(experiment.source)} | "
                     + " | ".join(str(c) for c in counts) + " |")
    lines += ["", "```{toctree}", ":hidden:", "", *(e.id for e, _ in entries), "```", ""]
    return "\n".join(lines)


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _copy_if_changed(src: Path, dst: Path) -> None:
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dst)


def write_pages(app: Any, config: Any) -> None:
    """Sphinx hook (``config-inited``): run (or reuse) every experiment and write ``reproduce/*.md``."""
    from sphinx.util import logging

    import dpcloak
    from dpcloak.experiments import discovery_errors, list_experiments

    log = logging.getLogger(__name__)
    mode = _mode()
    quick = mode == "quick"
    src = Path(app.srcdir)
    key = source_key(Path(dpcloak.__file__).resolve().parent, mode)
    cache = src / CACHE
    cache.mkdir(parents=True, exist_ok=True)
    out = src / PAGES
    out.mkdir(exist_ok=True)
    for module, error in discovery_errors().items():
        log.warning(f"reproduce pages: experiments in {module} unavailable: {error}")
    entries = []
    start = time.perf_counter()
    ran = 0
    for experiment in list_experiments():
        run_dir = cache / f"{experiment.id}-{key}"
        try:
            if (run_dir / "run.json").exists():
                record = json.loads((run_dir / "run.json").read_text())
            else:
                record = _run(experiment, run_dir, quick=quick)
                ran += 1
        except Exception as exc:  # any failure must fail the build (-W), with the experiment named
            log.warning(f"reproduce pages: {experiment.id} failed: {type(exc).__name__}: {exc}")
            continue
        _copy_if_changed(run_dir / "figure.png", out / f"{experiment.id}.png")
        _copy_if_changed(run_dir / "data.csv", out / f"{experiment.id}.csv")
        _write_if_changed(out / f"{experiment.id}.md", _page(experiment, record, quick=quick))
        entries.append((experiment, record))
    _write_if_changed(out / "index.md", _index(entries, quick=quick))
    for stale in cache.iterdir():  # runs of older sources
        if stale.is_dir() and not stale.name.endswith(key):
            shutil.rmtree(stale, ignore_errors=True)
    log.info(f"reproduce pages: {len(entries)} experiments ({ran} run, {mode} sweeps) in "
             f"{time.perf_counter() - start:.1f} s")


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
