"""``dpcloak reproduce``: list the papers' experiments or run one, writing CSV, PNG and a report."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from dpcloak.cli._common import cli_errors, console, err_console
from dpcloak.errors import InvalidParameterError


@cli_errors
def reproduce(
    experiment: str = typer.Argument(None, help="Experiment id (see --list)."),
    list_: bool = typer.Option(False, "--list", help="List the experiments and exit."),
    trials: int = typer.Option(None, "--trials", help="Trials per sweep point (default: the experiment's)."),
    quick: bool = typer.Option(False, "--quick", help="Tiny sweep: a smoke run in seconds."),
    seed: int = typer.Option(0, "--seed", help="Seed of the run; per-trial seeds are recorded in data.csv."),
    workers: int = typer.Option(2, "--workers", help="Local worker processes (ignored with --scheduler)."),
    scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler address, e.g. tcp://host:8786."),
    out: str = typer.Option(None, "--out", help="Output folder (default results/<experiment>)."),
) -> None:
    """Reproduce a paper figure or table: data.csv, figure.png and report.md (claims vs measured)."""
    from dpcloak.experiments import discovery_errors, list_experiments, run_experiment

    if list_:
        table = Table(title="experiments (dpcloak reproduce ID)", show_header=True)
        for name in ("id", "reproduces", "what"):
            table.add_column(name)
        for exp in list_experiments():
            table.add_row(exp.id, exp.source, exp.title)
        console.print(table)
        for module, error in discovery_errors().items():
            err_console.print(f"[yellow]warning:[/] experiments in {module} unavailable: {error}", highlight=False)
        return
    if experiment is None:
        raise InvalidParameterError("give an experiment id (see `dpcloak reproduce --list`)")
    result = run_experiment(experiment, trials=trials, quick=quick, seed=seed, scheduler=scheduler, workers=workers,
                            out=None if out is None else Path(out))
    table = Table(title=f"{result.experiment}: claims vs measured", show_header=True, show_lines=True)
    for name in ("claim", "measured", "verdict"):
        table.add_column(name)
    for claim in result.claims:
        table.add_row(claim.claim, claim.measured, claim.verdict)
    console.print(table)
    console.print(f"{len(result.rows)} trials ({result.n_failed} failed) in {result.elapsed:.1f} s; "
                  f"wrote {', '.join(str(p) for p in result.files)}", highlight=False)
