"""``dpcloak reproduce``: list the papers' experiments or run one, writing CSV, PNG and a report."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from dpcloak.cli._common import check_output_dir, cli_errors, console, emit_json, err_console, show_progress
from dpcloak.errors import InvalidParameterError


@cli_errors
def reproduce(
    experiment: str = typer.Argument(None, help="Experiment id (see --list)."),
    list_: bool = typer.Option(False, "--list", help="List the experiments and exit."),
    trials: int = typer.Option(None, "--trials", help="Trials per sweep point (default: the experiment's)."),
    quick: bool = typer.Option(False, "--quick", help="Tiny sweep: a smoke run in seconds (too small to judge)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the run; per-trial seeds are recorded in data.csv."),
    workers: int = typer.Option(2, "--workers", help="Local worker processes (not with --scheduler)."),
    scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler address, e.g. tcp://host:8786."),
    out: str = typer.Option(None, "--out", help="Output folder (default results/<experiment>)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar (it is also off when not on a "
                               "terminal)."),
) -> None:
    """Reproduce a paper figure or table: data.csv, figure.png and report.md (claims vs measured)."""
    if list_:
        given = [name for name, value in (("EXPERIMENT", experiment), ("--trials", trials), ("--quick", quick),
                                          ("--seed", seed != 0), ("--workers", workers != 2),
                                          ("--scheduler", scheduler), ("--out", out)) if value]
        if given:
            raise InvalidParameterError(f"--list runs nothing; remove {', '.join(given)}", parameter="--list")
        _list(as_json)
        return
    if experiment is None:
        raise InvalidParameterError("give an experiment id (see `dpcloak reproduce --list`)", parameter="EXPERIMENT")
    if scheduler is not None and workers != 2:
        raise InvalidParameterError("--workers is for local processes; with --scheduler the cluster decides",
                                    parameter="--workers")
    if workers < 1:
        raise InvalidParameterError(f"--workers must be a positive integer, got {workers}", parameter="--workers")
    if trials is not None and trials < 1:
        raise InvalidParameterError(f"--trials must be a positive integer, got {trials}", parameter="--trials")
    from dpcloak.experiments import get_experiment, run_experiment

    exp = get_experiment(experiment)
    _check_size(exp, trials, quick)
    result = run_experiment(exp, trials=trials, quick=quick, seed=seed, scheduler=scheduler, workers=workers,
                            out=check_output_dir("--out", out) if out is not None else None,
                            progress=show_progress(quiet) and not as_json)
    from dpcloak.experiments.report import presented_claims, quick_caption

    claims = [(c.claim, c.measured, c.verdict) for c in presented_claims(result)]  # as report.md says them
    if as_json:
        emit_json({"experiment": result.experiment, "quick": result.quick, "seed": result.seed,
                   "trials": len(result.rows), "failed": result.n_failed, "seconds": result.elapsed,
                   "claims": [{"claim": c, "measured": m, "verdict": v} for c, m, v in claims],
                   "files": [str(p) for p in result.files]})
        return
    table = Table(title=f"{result.experiment}: claims vs measured", show_header=True, show_lines=True)
    for name in ("claim", "measured", "verdict"):
        table.add_column(name)
    for row in claims:
        table.add_row(*row)
    console.print(table)
    if result.quick:
        console.print(quick_caption(exp, result.trials), highlight=False)
    console.print(f"{len(result.rows)} trials ({result.n_failed} failed) in {result.elapsed:.1f} s; "
                  f"wrote {', '.join(str(p) for p in result.files)}", highlight=False)


def _check_size(exp: Any, trials: int | None, quick: bool) -> None:
    """Refuse up front a run whose rows (kept in memory, then written to data.csv) cannot fit."""
    if trials is None:
        return
    from dpcloak._validation import check_memory

    points = len(exp.quick_sweep if quick else exp.sweep)
    check_memory(f"--trials {trials} over {points} sweep points ({trials * points:.3g} result rows of ~2 KiB)",
                 2048.0 * trials * points, hint="use fewer --trials")


def _list(as_json: bool) -> None:
    from dpcloak.experiments import discovery_errors, list_experiments

    experiments = list_experiments()
    if as_json:
        emit_json({"experiments": [{"id": e.id, "reproduces": e.source, "title": e.title} for e in experiments],
                   "unavailable": discovery_errors()})
        return
    table = Table(title="experiments (dpcloak reproduce ID)", show_header=True)
    for name in ("id", "reproduces", "what"):
        table.add_column(name)
    for exp in experiments:
        table.add_row(exp.id, exp.source, exp.title)
    console.print(table)
    for module, error in discovery_errors().items():
        err_console.print(f"[yellow]warning:[/] experiments in {module} unavailable: {error}", highlight=False)
