"""What an experiment is, and where the runner finds them.

An :class:`Experiment` declares a parameter sweep (a list of parameter dictionaries, one per point),
how many trials to run at each point, a top-level *trial function* that turns one parameter
dictionary and a seeded generator into one result row, a *plot function* that draws the rows and
a *claims function* that compares the rows with what the paper says.

Registration needs no edit to this file: every module of the :mod:`dpcloak.experiments` package
whose name does not start with ``_`` (and is not one of :data:`INFRASTRUCTURE`) is imported on
first use, and each :class:`Experiment` in its module-level ``EXPERIMENTS`` tuple is registered.
A module that fails to import is skipped and reported by :func:`discovery_errors` (the CLI shows
it), so one broken module never hides the others.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpcloak.errors import InvalidParameterError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "Claim",
    "Experiment",
    "INFRASTRUCTURE",
    "Row",
    "discovery_errors",
    "get_experiment",
    "list_experiments",
    "register",
    "vary",
]

#: One trial's result: parameter names and measured quantities mapped to plain values.
Row = Mapping[str, Any]

#: Modules of :mod:`dpcloak.experiments` that hold machinery, not experiments (never scanned).
INFRASTRUCTURE = frozenset({"registry", "runner", "plotting", "report"})

VERDICTS = ("confirmed", "not confirmed", "partly", "not applicable")


@dataclass(frozen=True)
class Claim:
    """One line of a report's claim/measured table.

    Attributes
    ----------
    claim : str
        What the paper says, with its figure/section (e.g. "EMD grows as T → 0 and T → ∞ (Fig. 4c)").
    measured : str
        What this run measured, formatted from the data (never typed by hand).
    verdict : str
        One of ``"confirmed"``, ``"not confirmed"``, ``"partly"``, ``"not applicable"``.

    Examples
    --------
    >>> Claim(claim="EMD grows as T → 0 (Fig. 4c)", measured="EMD 0.31 at T = 1e-4, 0.05 at T = 0.1",
    ...       verdict="confirmed").verdict
    'confirmed'

    >>> Claim.check("EMD falls as ε grows", "0.31 at ε = 0.1, 0.05 at ε = 10", 0.05 < 0.31).verdict
    'confirmed'
    """

    claim: str
    measured: str
    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise InvalidParameterError(f"verdict must be one of {', '.join(VERDICTS)}, got {self.verdict!r}",
                                        parameter="verdict")

    @classmethod
    def check(cls, claim: str, measured: str, holds: bool | np.bool_) -> Claim:
        """A claim whose verdict is ``confirmed`` when ``holds`` else ``not confirmed``."""
        return cls(claim, measured, "confirmed" if bool(holds) else "not confirmed")


@dataclass(frozen=True)
class Experiment:
    """A declared parameter sweep × trials with its trial, plot and claims functions.

    Attributes
    ----------
    id : str
        Short unique name used on the command line and as the output folder
        (``<paper>-<figure>``, e.g. ``"sensor-fig3"``, ``"thesis-table8.2"``, ``"heatmaps-fig2"``).
    title : str
        One line shown by ``dpcloak reproduce --list``.
    source : str
        The document and figure/table reproduced (e.g. "Gilbert & McMillan, Figure 3").
    trial : callable
        ``trial(params, rng) -> dict``. Must be a **module-level function** (it is pickled to worker
        processes or Dask workers). ``params`` is one point of the sweep, ``rng`` a
        :class:`numpy.random.Generator` seeded from the per-trial seed the runner records. Return
        the measured values only (parameters and seed are added by the runner). Use the standard
        names ``delta2``, ``sigma``, ``emd``, ``solve_time`` where they apply; raising a
        :class:`~dpcloak.errors.DpcloakError` records the trial as failed (kept in the data).
    sweep : sequence of dict
        The points: one parameter dictionary each (build them with :func:`vary`). A ``panel`` key
        groups points into figure panels.
    quick_sweep : sequence of dict
        A tiny sweep for ``--quick`` and the tests (seconds, not minutes).
    plot : callable
        ``plot(rows) -> matplotlib.figure.Figure`` from the list of rows (dicts with every parameter,
        ``seed``, ``trial``, ``point`` and the trial's results). Use :mod:`dpcloak.experiments.plotting`.
    claims : callable
        ``claims(rows) -> sequence of Claim`` computed from the rows.
    trials : int
        Trials per point by default (the papers use 10; 1 for deterministic computations).
    quick_trials : int
        Trials per point with ``--quick``.
    notes : str
        Markdown paragraph copied into the report: choices the paper leaves open (sweep ranges,
        readings of ambiguous captions) and discrepancies found.

    Examples
    --------
    A toy experiment (real ones live in the package's modules and are registered there; see
    :func:`~dpcloak.experiments.runner.run_experiment` for one that runs):

    >>> import matplotlib.pyplot as plt
    >>> def square(params, rng):
    ...     return {"value": params["x"] ** 2}
    >>> def histogram(rows):
    ...     return plt.figure().gca().hist([r["value"] for r in rows])[2][0].figure
    >>> toy = Experiment(id="toy-square", title="Squares", source="a doctest", trial=square,
    ...                  sweep=vary("x", [1, 2, 3]), quick_sweep=vary("x", [1]), plot=histogram, claims=lambda rows: [],
    ...                  trials=2)
    >>> toy.id, len(toy.sweep), toy.trials
    ('toy-square', 3, 2)
    >>> Experiment(id="toy square", title="", source="", trial=square, sweep=[{}], quick_sweep=[{}],
    ...            plot=histogram, claims=lambda rows: [])
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: experiment id must be non-empty without spaces or slashes, got 'toy square'
    """

    id: str
    title: str
    source: str
    trial: Callable[[Mapping[str, Any], np.random.Generator], Mapping[str, Any]]
    sweep: Sequence[Mapping[str, Any]]
    quick_sweep: Sequence[Mapping[str, Any]]
    plot: Callable[[Sequence[Row]], Figure]
    claims: Callable[[Sequence[Row]], Sequence[Claim]]
    trials: int = 10
    quick_trials: int = 2
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.id or any(c.isspace() or c in "/\\" for c in self.id):
            raise InvalidParameterError(f"experiment id must be non-empty without spaces or slashes, got {self.id!r}",
                                        parameter="experiment")
        for name in ("trials", "quick_trials"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}", parameter=name)
        for name in ("sweep", "quick_sweep"):
            if len(getattr(self, name)) == 0:
                raise InvalidParameterError(f"{name} of experiment {self.id!r} must contain at least one point",
                                            parameter=name)


def vary(name: str, values: Iterable[Any], *, panel: str | None = None, **fixed: Any) -> list[dict[str, Any]]:
    """Points varying one parameter with the others fixed (one panel of a paper figure).

    Examples
    --------
    >>> vary("n", [50, 100], panel="a", m=50)
    [{'panel': 'a', 'm': 50, 'n': 50}, {'panel': 'a', 'm': 50, 'n': 100}]
    """
    head = {} if panel is None else {"panel": panel}
    return [{**head, **fixed, name: value} for value in values]


_REGISTRY: dict[str, Experiment] = {}
_ERRORS: dict[str, str] = {}
_DISCOVERED = False


def register(experiment: Experiment) -> Experiment:
    """Add an experiment to the registry (ids are unique) and return it.

    Examples
    --------
    Registering is idempotent for the same object; a second experiment with a taken id is refused:

    >>> import dataclasses
    >>> fig3 = get_experiment("sensor-fig3")
    >>> register(fig3) is fig3
    True
    >>> register(dataclasses.replace(fig3, title="a copy"))
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: experiment id 'sensor-fig3' is already registered ...
    """
    if not isinstance(experiment, Experiment):
        raise InvalidParameterError(f"experiment must be an Experiment, got {type(experiment).__name__}",
                                    parameter="experiment")
    existing = _REGISTRY.get(experiment.id)
    if existing is not None and existing is not experiment:
        raise InvalidParameterError(f"experiment id {experiment.id!r} is already registered ({existing.source})",
                                    parameter="experiment")
    _REGISTRY[experiment.id] = experiment
    return experiment


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    package = importlib.import_module("dpcloak.experiments")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in INFRASTRUCTURE:
            continue
        name = f"dpcloak.experiments.{info.name}"
        try:
            module = importlib.import_module(name)
            for experiment in getattr(module, "EXPERIMENTS", ()):
                register(experiment)
        except Exception as exc:  # a broken or half-written module must not hide the others
            _ERRORS[name] = f"{type(exc).__name__}: {exc}"


def list_experiments() -> list[Experiment]:
    """Every registered experiment, sorted by id (discovers the package's modules on first call).

    Examples
    --------
    >>> ids = [e.id for e in list_experiments()]
    >>> "sensor-fig3" in ids, ids == sorted(ids)
    (True, True)
    """
    _discover()
    return [_REGISTRY[key] for key in sorted(_REGISTRY)]


def get_experiment(experiment_id: str) -> Experiment:
    """The experiment with this id; :class:`InvalidParameterError` listing the ids if unknown.

    Examples
    --------
    >>> get_experiment("sensor-fig3").source
    'Gilbert & McMillan, Figure 3 / Theorem 8, Table 2'
    >>> get_experiment("no-such-figure")
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: unknown experiment 'no-such-figure'; known experiments: ...
    """
    _discover()
    if experiment_id not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise InvalidParameterError(f"unknown experiment {experiment_id!r}; known experiments: {known}",
                                    parameter="experiment_id", allowed=known, got=experiment_id)
    return _REGISTRY[experiment_id]


def discovery_errors() -> dict[str, str]:
    """Experiment modules that failed to import, mapped to their error message.

    Examples
    --------
    Every experiment module of this installation imports:

    >>> _ = list_experiments()
    >>> discovery_errors()
    {}
    """
    _discover()
    return dict(_ERRORS)
