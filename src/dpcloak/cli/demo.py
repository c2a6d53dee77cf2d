"""``dpcloak demo``: Gilbert & McMillan's default scenario end to end, with a Figure-1-style plot."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from dpcloak.cli._common import check_output_dir, cli_errors, console, emit_json, progress_bar, show_progress
from dpcloak.errors import InvalidParameterError
from dpcloak.metrics import as_distribution, emd
from dpcloak.models import heat_kernel_1d
from dpcloak.privacy.local import SensorPrivatizer
from dpcloak.privacy.sensitivity import l2_sensitivity
from dpcloak.recovery import bpdn


def _plot(points: np.ndarray, true: np.ndarray, recovered: np.ndarray, title: str, path: Path) -> None:
    """True (red) and recovered (blue, dashed) sources, both normalised to unit ℓ1 (Gilbert & McMillan Figure 1)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(points, true / true.sum(), color="tab:red", label="true sources f₀")
    rec = recovered / recovered.sum() if recovered.sum() > 0 else recovered
    ax.plot(points, rec, color="tab:blue", linestyle="--", label="recovered f̂ (private readings)")
    ax.set_xlabel("location")
    ax.set_ylabel("normalised intensity")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)


WEAK_DELTA = 1e-4
"""A demo δ above this is flagged: δ bounds the chance of an outright leak, and should be far below 1/people."""


@cli_errors
def demo(
    n: int = typer.Option(100, help="Number of source locations."),
    m: int = typer.Option(50, help="Number of sensors."),
    t: float = typer.Option(0.1, help="Time lapse t."),
    epsilon: float = typer.Option(1.0, help="Privacy parameter epsilon."),
    delta: float = typer.Option(0.1, help="Privacy parameter delta (default 0.1: the paper's illustrative value, "
                                "weak; a release would use 1e-6 or less)."),
    source: float = typer.Option(0.5, help="Location of the single heat source in (0, 1]."),
    seed: int = typer.Option(0, help="Seed of the privacy noise."),
    out: str = typer.Option(None, help="Directory for the PNG (created if missing) [default: <tmp>/dpcloak-demo]."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar (it is also off when not on a "
                               "terminal)."),
) -> None:
    """Gilbert & McMillan's default pipeline: model → Δ2 → σ → private readings → BPDN → EMD, plus a plot."""
    if not 0.0 < source <= 1.0:
        raise InvalidParameterError(f"--source must lie in (0, 1], got {source:g}", parameter="--source")
    directory = Path(out) if out is not None else Path(tempfile.gettempdir()) / "dpcloak-demo"
    check_output_dir("--out", directory)
    steps = ("forward model", "sensitivity", "private readings", "recovery", "plot")
    with progress_bar(show_progress(quiet), "demo") as update:
        update(0, len(steps), steps[0])
        model = heat_kernel_1d(n, m, t)
        points = np.asarray(model.domain.coordinates(), dtype=float).ravel()
        sources = np.zeros(n)
        index = int(np.argmin(np.abs(points - source)))
        sources[index] = 1.0
        update(1, len(steps), steps[1])
        delta2 = l2_sensitivity(model)
        privatizer = SensorPrivatizer.from_model(model, epsilon=epsilon, delta=delta, sensitivity=delta2,
                                                 noise="float")  # a seeded simulation, not a release
        sigma = privatizer.mechanism.sigma
        update(2, len(steps), steps[2])
        noisy = privatizer.privatize_all(model.matvec(sources), rng=np.random.default_rng(seed))
        update(3, len(steps), steps[3])
        rec = bpdn(model, noisy, sigma=sigma)
        estimate = as_distribution(rec.x)  # an all-zero estimate reads as uniform, flagged degenerate
        error = emd(sources, rec.x, model.domain)
        update(4, len(steps), steps[4])
        directory.mkdir(parents=True, exist_ok=True)
        png = directory / f"demo_n{n}_m{m}_t{t:g}_eps{epsilon:g}_delta{delta:g}_seed{seed}.png"
        title = f"n={n}, m={m}, t={t:g}, ε={epsilon:g}, δ={delta:g}, σ={sigma:.3g}: EMD={error:.3g}"
        _plot(points, sources, rec.x, title, png)
        update(5, len(steps), "done")
    status = "converged" if rec.converged else "ball out of reach" if not rec.feasible else "stopped"
    weak = (f"delta = {delta:g} is weak: with probability up to delta the mechanism may reveal a person outright; "
            f"the paper uses it to illustrate, a release would use 1e-6 or less (--delta 1e-6)"
            if delta > WEAK_DELTA else None)
    peak = None if estimate.degenerate else float(points[int(np.argmax(rec.x))])
    if as_json:
        emit_json({"model": repr(model), "source": float(points[index]), "delta2": delta2, "epsilon": epsilon,
                   "delta": delta, "sigma": sigma, "radius": rec.radius, "radius_policy": rec.radius_policy,
                   "recovery": status, "degenerate": estimate.degenerate, "recovered_peak": peak, "emd": error,
                   "plot": str(png), "warning": weak})
        return
    table = Table(title="dpcloak demo: Gilbert & McMillan default scenario")
    table.add_column("step")
    table.add_column("result", justify="right")
    table.add_row("forward model", repr(model))
    table.add_row("true source", f"one unit source at {points[index]:.3g}")
    table.add_row("sensitivity Δ2", f"{delta2:.6g}")
    table.add_row(f"noise σ (analytic Gaussian, ε={epsilon:g}, δ={delta:g})", f"{sigma:.6g}")
    table.add_row(f"BPDN radius ({rec.radius_policy})", f"{rec.radius:.6g}")
    table.add_row("recovery", status)
    table.add_row("recovered peak", "none: the estimate is all zero (read as uniform)" if peak is None
                  else f"{peak:.3g}")
    table.add_row("EMD(f₀/‖f₀‖₁, f̂/‖f̂‖₁)", f"{error:.4g}")
    console.print(table)
    console.print(f"plot saved to {png}", highlight=False)
    if weak is not None:
        console.print(f"[yellow]note:[/] {weak}", highlight=False)
