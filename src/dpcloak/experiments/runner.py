"""Run an experiment's sweep × trials locally or on Dask and write data.csv, figure.png, report.md.

Seeds: the run has one integer ``seed``; trial ``j`` of point ``i`` gets the seed
``SeedSequence([seed, i, j]).generate_state(1)[0]`` (recorded in the ``seed`` column), and its
generator is ``numpy.random.default_rng(that seed)``. A row is therefore reproducible on its own,
and the rows do not depend on where or in which order the trials ran.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpcloak._validation import check_int
from dpcloak.errors import DpcloakError, InvalidParameterError, MissingExtraError
from dpcloak.experiments.registry import Claim, Experiment, get_experiment

__all__ = ["RunResult", "run_experiment", "trial_seed"]

#: Where results go unless ``out`` is given: ``results/<experiment id>/`` under the working directory.
DEFAULT_RESULTS = Path("results")


@dataclass(frozen=True)
class TrialSpec:
    """One unit of work: a sweep point, a trial index and its seed."""

    experiment: str
    trial_fn: Callable[[Mapping[str, Any], np.random.Generator], Mapping[str, Any]]
    point: int
    trial: int
    seed: int
    params: Mapping[str, Any]


@dataclass(frozen=True)
class RunResult:
    """What :func:`run_experiment` produced.

    Attributes
    ----------
    experiment : str
        The experiment id.
    out_dir : Path
        Folder holding ``data.csv``, ``figure.png`` and ``report.md``.
    rows : tuple of dict
        One row per trial, sorted by (point, trial), failed trials included.
    claims : tuple of Claim
        The report's claim/measured table.
    seed, trials : int
        The run's seed and trials per point.
    quick : bool
        Whether the tiny sweep was used.
    elapsed : float
        Wall-clock seconds for the trials (excluding plotting and writing).
    n_failed : int
        Trials whose function raised a :class:`~dpcloak.errors.DpcloakError` (``error`` column).
    executor : str
        ``"in-process"``, ``"processes(k)"`` or ``"dask(<address>)"``.

    Examples
    --------
    Returned by :func:`run_experiment` (a toy experiment here; see :class:`Experiment`):

    >>> import tempfile
    >>> import matplotlib.pyplot as plt
    >>> from dpcloak.experiments import vary
    >>> def trial(params, rng):
    ...     return {"value": params["x"] + rng.normal(0.0, 0.01)}
    >>> def plot(rows):
    ...     fig, ax = plt.subplots()
    ...     ax.plot([r["x"] for r in rows], [r["value"] for r in rows], "o")
    ...     return fig
    >>> toy = Experiment(id="toy", title="Toy", source="a doctest", trial=trial, sweep=vary("x", [1, 2]),
    ...                  quick_sweep=vary("x", [1]), plot=plot, claims=lambda rows: [], trials=1)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> run = run_experiment(toy, workers=1, out=Path(tmp.name) / "toy", progress=False)
    >>> isinstance(run, RunResult), len(run.rows), run.executor, [p.name for p in run.files]
    (True, 2, 'in-process', ['data.csv', 'figure.png', 'report.md'])
    >>> plt.close("all"); tmp.cleanup()
    """

    experiment: str
    out_dir: Path
    rows: tuple[dict[str, Any], ...]
    claims: tuple[Claim, ...]
    seed: int
    trials: int
    quick: bool
    elapsed: float
    n_failed: int
    executor: str

    @property
    def files(self) -> tuple[Path, Path, Path]:
        """``(data.csv, figure.png, report.md)``."""
        return self.out_dir / "data.csv", self.out_dir / "figure.png", self.out_dir / "report.md"


def trial_seed(seed: int, point: int, trial: int) -> int:
    """The recorded seed of trial ``trial`` at sweep point ``point`` of a run seeded ``seed``.

    Examples
    --------
    Deterministic and distinct per trial, so any single trial can be re-run alone:

    >>> trial_seed(0, 0, 0) == trial_seed(0, 0, 0), trial_seed(0, 0, 0) != trial_seed(0, 0, 1)
    (True, True)
    """
    return int(np.random.SeedSequence([seed, point, trial]).generate_state(1)[0])


def plan_trials(
    experiment: Experiment, *, trials: int | None = None, quick: bool = False, seed: int = 0
) -> list[TrialSpec]:
    """Every (point, trial) of the run, in order, with its seed."""
    n_trials = trials if trials is not None else (experiment.quick_trials if quick else experiment.trials)
    n_trials = check_int("trials", n_trials, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    points = experiment.quick_sweep if quick else experiment.sweep
    return [
        TrialSpec(experiment.id, experiment.trial, i, j, trial_seed(seed, i, j), dict(params))
        for i, params in enumerate(points)
        for j in range(n_trials)
    ]


def run_trial(spec: TrialSpec) -> dict[str, Any]:
    """Run one trial and return its row: ids, seed, parameters, results and ``error`` (empty if none).

    A :class:`~dpcloak.errors.DpcloakError` raised by the trial is recorded in ``error``, never
    dropped; a :class:`~dpcloak.errors.MissingExtraError` (the installation lacks what every trial
    needs) and any other exception propagate.
    """
    row: dict[str, Any] = {"experiment": spec.experiment, "point": spec.point, "trial": spec.trial, "seed": spec.seed}
    row.update(spec.params)
    try:
        result = spec.trial_fn(spec.params, np.random.default_rng(spec.seed))
        clash = sorted(k for k in set(result) & set(row) if result[k] != row[k])
        if clash:
            raise InvalidParameterError(f"trial results must not change parameters or ids: {clash}",
                                        parameter="trial", got=clash)
        row.update(result)
        row["error"] = ""
    except MissingExtraError:
        raise
    except DpcloakError as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def _iterate_local(specs: Sequence[TrialSpec], workers: int) -> Iterator[dict[str, Any]]:
    if workers == 1:
        yield from map(run_trial, specs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures: list[Future[dict[str, Any]]] = [pool.submit(run_trial, spec) for spec in specs]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # do not run the rest after a fatal error
            raise


def _iterate_dask(specs: Sequence[TrialSpec], scheduler: Any) -> Iterator[dict[str, Any]]:
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise MissingExtraError(
            "running on a Dask cluster needs the 'dask' extra: pip install 'dpcloak[dask]'"
        ) from exc
    if isinstance(scheduler, Client):
        client = scheduler
    else:
        try:
            client = Client(scheduler, timeout=30)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InvalidParameterError(f"cannot connect to the Dask scheduler at {scheduler!r}: {exc}",
                                        parameter="scheduler", got=scheduler) from exc
    try:
        futures = client.map(run_trial, list(specs), pure=False)
        for future in dask_completed(futures):
            yield future.result()
    except (ImportError, RuntimeError) as exc:  # the cluster's Python cannot unpickle dpcloak's trial functions
        if isinstance(exc, RuntimeError) and "deserializ" not in str(exc):
            raise
        raise MissingExtraError(f"the Dask cluster cannot import what the trials need ({exc}); install dpcloak "
                                f"(same version) on the scheduler and every worker") from exc
    finally:
        if client is not scheduler:
            client.close()


def _progress_iter(rows: Iterator[dict[str, Any]], total: int, label: str, show: bool) -> Iterator[dict[str, Any]]:
    if not show:
        yield from rows
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("trials"),
               TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(label, total=total)
        for row in rows:
            progress.advance(task)
            yield row


def run_experiment(
    experiment: str | Experiment,
    *,
    trials: int | None = None,
    quick: bool = False,
    seed: int = 0,
    scheduler: Any = None,
    workers: int = 2,
    out: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> RunResult:
    """Run every (point, trial) of an experiment and write its three output files.

    Parameters
    ----------
    experiment : str or Experiment
        A registered id (see :func:`~dpcloak.experiments.registry.list_experiments`) or an object.
    trials : int, optional
        Trials per point; default the experiment's ``trials`` (``quick_trials`` with ``quick``).
    quick : bool, default False
        Use the experiment's tiny ``quick_sweep`` (for tests and smoke runs).
    seed : int, default 0
        The run's seed (≥ 0); per-trial seeds derive from it (:func:`trial_seed`).
    scheduler : str or dask.distributed.Client, optional
        A Dask scheduler address (``"tcp://host:8786"``) or client: trials run on that cluster.
        Needs the ``dask`` extra. Default: local processes.
    workers : int, default 2
        Local worker processes (1 runs in this process); ignored with ``scheduler``.
    out : path, optional
        Output folder; default ``results/<experiment id>``.
    progress : bool, default True
        Show a progress bar (trials done, elapsed and time left) on the terminal.

    Returns
    -------
    RunResult
        The rows, the claims and the output folder.

    Examples
    --------
    A toy experiment run in this process (``workers=1``); the rows record each trial's seed, so the
    run is reproducible:

    >>> import tempfile
    >>> import matplotlib.pyplot as plt
    >>> from dpcloak.experiments import Claim, vary
    >>> def square(params, rng):
    ...     return {"value": params["x"] ** 2 + rng.normal(0.0, 0.01)}
    >>> def plot(rows):
    ...     fig, ax = plt.subplots()
    ...     ax.plot([r["x"] for r in rows], [r["value"] for r in rows], "o")
    ...     ax.set(xlabel="x", ylabel="x² + noise")
    ...     return fig
    >>> def claims(rows):
    ...     worst = max(abs(r["value"] - r["x"] ** 2) for r in rows)
    ...     verdict = "confirmed" if worst < 0.1 else "partly"
    ...     return [Claim("the trial squares x", f"largest deviation {worst:.3f}", verdict)]
    >>> toy = Experiment(id="toy-square", title="Squares", source="a doctest", trial=square,
    ...                  sweep=vary("x", [1, 2, 3]), quick_sweep=vary("x", [1]), plot=plot, claims=claims, trials=2)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> run = run_experiment(toy, workers=1, out=Path(tmp.name) / "first", progress=False)
    >>> len(run.rows), run.n_failed, [c.verdict for c in run.claims]
    (6, 0, ['confirmed'])
    >>> run.rows[1]["seed"] == trial_seed(0, 0, 1)
    True
    >>> again = run_experiment(toy, workers=1, out=Path(tmp.name) / "again", progress=False)
    >>> [r["value"] for r in again.rows] == [r["value"] for r in run.rows]
    True
    >>> plt.close("all"); tmp.cleanup()
    """
    from dpcloak.experiments.report import write_outputs

    exp = get_experiment(experiment) if isinstance(experiment, str) else experiment
    if not isinstance(exp, Experiment):
        raise InvalidParameterError(f"experiment must be an id or an Experiment, got {type(experiment).__name__}",
                                    parameter="experiment")
    workers = check_int("workers", workers, minimum=1)
    specs = plan_trials(exp, trials=trials, quick=quick, seed=seed)
    n_trials = max(s.trial for s in specs) + 1
    if scheduler is not None:
        source = _iterate_dask(specs, scheduler)
        executor = f"dask({scheduler if isinstance(scheduler, str) else type(scheduler).__name__})"
    else:
        workers = min(workers, len(specs))
        source = _iterate_local(specs, workers)
        executor = "in-process" if workers == 1 else f"processes({workers})"
    start = time.perf_counter()
    rows = sorted(_progress_iter(source, len(specs), exp.id, progress), key=lambda r: (r["point"], r["trial"]))
    elapsed = time.perf_counter() - start
    out_dir = Path(out) if out is not None else DEFAULT_RESULTS / exp.id
    if all(row["error"] for row in rows):
        raise DpcloakError(f"every trial of {exp.id} failed, so there is nothing to plot or report; "
                           f"the first error: {rows[0]['error']}")
    claims = tuple(exp.claims(rows))
    result = RunResult(
        experiment=exp.id, out_dir=out_dir, rows=tuple(rows), claims=claims, seed=seed, trials=n_trials, quick=quick,
        elapsed=elapsed, n_failed=sum(1 for r in rows if r["error"]), executor=executor,
    )
    write_outputs(exp, result)
    return result
