"""Write a run's outputs: ``data.csv`` (one row per trial), ``figure.png`` and ``report.md``."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpcloak import __version__
from dpcloak.experiments.registry import Experiment, Row

if TYPE_CHECKING:
    from dpcloak.experiments.runner import RunResult

__all__ = ["STANDARD_COLUMNS", "QUICK_VERDICT", "ShownClaim", "columns", "finite_text", "presented_claims",
           "quick_caption", "write_outputs"]

#: Columns every data.csv has, empty where a quantity does not apply (e.g. EMD in a Δ2-only figure).
STANDARD_COLUMNS = ("delta2", "sigma", "emd", "solve_time")
_ID_COLUMNS = ("experiment", "point", "trial", "seed")


def columns(rows: Sequence[Row]) -> list[str]:
    """Column order: ids and seed, parameters/results in first-seen order, standard columns, ``error``.

    Examples
    --------
    >>> columns([{"experiment": "fig5", "point": 0, "trial": 0, "seed": 1, "n": 10, "emd": 0.2, "error": ""}])
    ['experiment', 'point', 'trial', 'seed', 'n', 'delta2', 'sigma', 'emd', 'solve_time', 'error']
    """
    seen: dict[str, None] = dict.fromkeys(_ID_COLUMNS)
    for row in rows:
        seen.update(dict.fromkeys(k for k in row if k not in STANDARD_COLUMNS and k != "error"))
    return [*seen, *STANDARD_COLUMNS, "error"]


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """One line per trial with every column of :func:`columns` (missing values left empty)."""
    names = columns(rows)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for row in rows:
            writer.writerow([_cell(row.get(name)) for name in names])


def _truthy_count(rows: Sequence[Row], key: str) -> int:
    return sum(1 for r in rows if r.get(key) is True or r.get(key) in (1, "True", "true"))


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _sweep_lines(points: Sequence[Row]) -> list[str]:
    """One line per panel: the varied parameters with their values, then the fixed ones."""
    panels: dict[str, list[Row]] = {}
    for point in points:
        panels.setdefault(str(point.get("panel", "")), []).append(point)
    lines = []
    for panel, group in panels.items():
        keys = [k for k in dict.fromkeys(k for p in group for k in p) if k != "panel"]
        values = {k: list(dict.fromkeys(_fmt(p.get(k)) for p in group)) for k in keys}
        varied = "; ".join(f"`{k}` ∈ {{{', '.join(v)}}}" for k, v in values.items() if len(v) > 1)
        fixed = ", ".join(f"`{k}` = {v[0]}" for k, v in values.items() if len(v) == 1)
        head = f"- panel {panel}: " if panel else "- "
        lines.append(head + (varied or "single point") + (f" (fixed: {fixed})" if fixed else ""))
    return lines


QUICK_VERDICT = "too small to judge (--quick)"
"""The verdict of every claim of a quick run: a smoke sweep is no evidence either way."""


def finite_text(measured: str) -> str:
    """``measured`` with NaN and infinite numbers (fits over too few points) written as ``n/a``.

    Examples
    --------
    >>> finite_text("slope nan over 1 point(s), ratio inf, -inf; nanometre kept")
    'slope n/a over 1 point(s), ratio n/a, n/a; nanometre kept'
    """
    return re.sub(r"(?<![\w.])[-+]?(nan|inf)(?![\w])", "n/a", measured, flags=re.IGNORECASE)


@dataclass(frozen=True)
class ShownClaim:
    """One claim as it is shown: the paper's claim, the measured text (``n/a``, never ``nan``) and the verdict.

    Examples
    --------
    >>> shown = ShownClaim(claim="EMD <= 0.05", measured="n/a", verdict="too small to judge (--quick)")
    >>> shown.measured, shown.verdict.startswith("too small")
    ('n/a', True)
    """

    claim: str
    measured: str
    verdict: str


def presented_claims(result: RunResult) -> tuple[ShownClaim, ...]:
    """The claims as ``report.md`` and ``dpcloak reproduce`` show them (the same text in both).

    A quick run's verdicts are :data:`QUICK_VERDICT`; every measured text has ``n/a`` for NaN and
    infinite numbers.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Run:
    ...     claims: tuple
    ...     quick: bool
    >>> from dpcloak.experiments import Claim
    >>> claim = Claim("Δ2 ∝ m^0.5", "slope nan", "not confirmed")
    >>> [(c.measured, c.verdict) for c in presented_claims(Run((claim,), quick=True))]
    [('slope n/a', 'too small to judge (--quick)')]
    >>> presented_claims(Run((claim,), quick=False))[0].verdict
    'not confirmed'
    """
    return tuple(ShownClaim(claim=c.claim, measured=finite_text(c.measured),
                       verdict=QUICK_VERDICT if result.quick else c.verdict) for c in result.claims)


def write_report(experiment: Experiment, result: RunResult, path: Path) -> None:
    """The markdown report: provenance, trial accounting, the claim/measured table and the figure."""
    rows = result.rows
    failed = [r for r in rows if r.get("error")]
    policies = sorted({str(r["radius_policy"]) for r in rows if r.get("radius_policy")})
    lines = [
        f"# {experiment.id}: {experiment.title}",
        "",
        f"Source: {experiment.source}.",
        "",
        f"- dpcloak version: {__version__}",
        f"- seed: {result.seed} (per-trial seeds in `data.csv`, column `seed`)",
        f"- trials per point: {result.trials}{' (quick sweep)' if result.quick else ''}; "
        f"total trials: {len(rows)}; executor: {result.executor}; trial time: {result.elapsed:.1f} s",
        f"- failed trials (kept in `data.csv`, column `error`): {len(failed)}",
    ]
    if any("infeasible" in r for r in rows):
        lines.append(f"- trials where the recovery constraint was infeasible (kept, flagged in column `infeasible`): "
                     f"{_truthy_count(rows, 'infeasible')}")
    if any("converged" in r for r in rows):
        lines.append(f"- trials whose solver did not converge (kept, column `converged`): "
                     f"{sum(1 for r in rows if 'converged' in r and not r['converged'])}")
    if any("zero_estimate" in r for r in rows):
        lines.append(f"- trials whose estimate was identically zero (kept; errors measured against the uniform "
                     f"distribution, column `zero_estimate`): {_truthy_count(rows, 'zero_estimate')}")
    if policies:
        lines.append(f"- recovery radius policy: {', '.join(policies)}")
    if failed:
        lines.append(f"- first failure: `{failed[0]['error']}`")
    lines += ["", "## Claims", ""]
    if result.quick:
        lines += [quick_caption(experiment, result.trials) + ".", ""]
    lines += ["| claim (paper) | measured (this run) | verdict |", "|---|---|---|"]
    for claim in presented_claims(result):
        cells = (c.replace("|", "\\|").replace("\n", " ") for c in (claim.claim, claim.measured, claim.verdict))
        lines.append("| " + " | ".join(cells) + " |")
    if experiment.notes:
        lines += ["", "## Notes", "", experiment.notes.strip()]
    points = experiment.quick_sweep if result.quick else experiment.sweep
    lines += ["", "## Sweep", "", *_sweep_lines(points), "", "## Figure", "", "![figure](figure.png)", ""]
    path.write_text("\n".join(lines))


def quick_caption(experiment: Experiment, trials: int) -> str:
    """The line a quick run's figure carries: what was run, and that it is too small to judge.

    Statistical experiments (several trials per point in the paper's sweep) are too small to judge
    on a quick sweep; deterministic ones are judged on fewer points.

    Examples
    --------
    >>> from dpcloak.experiments import get_experiment
    >>> caption = quick_caption(get_experiment("sensor-fig2"), 2)
    >>> caption.startswith("Quick sweep (2 points × 2 trials): too small to judge")
    True
    """
    points = len(experiment.quick_sweep)
    size = f"{points} point{'s' if points > 1 else ''} × {trials} trial{'s' if trials > 1 else ''}"
    if experiment.trials > 1:
        return (f"Quick sweep ({size}): too small to judge the paper's claims; "
                f"run without --quick for {len(experiment.sweep)} points × {experiment.trials} trials")
    return f"Quick sweep ({size}): fewer points than the paper's {len(experiment.sweep)}; run without --quick for all"


def write_outputs(experiment: Experiment, result: RunResult) -> None:
    """Create the output folder and write ``data.csv``, ``figure.png`` and ``report.md``.

    Examples
    --------
    :func:`~dpcloak.experiments.run_experiment` calls it; here a finished run of a toy experiment
    (see :class:`~dpcloak.experiments.Experiment`) is written again to another folder:

    >>> import dataclasses, tempfile
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from dpcloak.experiments import Experiment, run_experiment, vary
    >>> def plot(rows):
    ...     fig, ax = plt.subplots()
    ...     ax.plot([r["x"] for r in rows], [r["value"] for r in rows], "o")
    ...     return fig
    >>> toy = Experiment(id="toy", title="Toy", source="a doctest", trial=lambda p, rng: {"value": 2 * p["x"]},
    ...                  sweep=vary("x", [1, 2]), quick_sweep=vary("x", [1]), plot=plot, claims=lambda rows: [],
    ...                  trials=1)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> run = run_experiment(toy, workers=1, out=Path(tmp.name) / "first", progress=False)
    >>> again = dataclasses.replace(run, out_dir=Path(tmp.name) / "again")
    >>> write_outputs(toy, again)
    >>> sorted(p.name for p in again.out_dir.iterdir())
    ['data.csv', 'figure.png', 'report.md']
    >>> again.files[2].read_text().splitlines()[0]
    '# toy: Toy'
    >>> plt.close("all"); tmp.cleanup()
    """
    data, figure_path, report = result.files
    result.out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(result.rows, data)
    figure = experiment.plot(list(result.rows))
    if result.quick:
        figure.suptitle(quick_caption(experiment, result.trials), fontsize=9, color="tab:red")
    figure.savefig(figure_path, dpi=90)
    write_report(experiment, result, report)
