"""Reproductions of the papers' figures and tables, and the runner that executes them.

Each module here (other than the machinery: ``registry``, ``runner``, ``plotting``, ``report``)
declares a module-level ``EXPERIMENTS`` tuple of :class:`Experiment`; the registry finds them
without any list to edit. ``dpcloak reproduce --list`` shows them and ``dpcloak reproduce ID``
runs one, writing ``data.csv``, ``figure.png`` and ``report.md`` to ``results/ID/``.
"""

from dpcloak.experiments.registry import (
    Claim,
    Experiment,
    discovery_errors,
    get_experiment,
    list_experiments,
    register,
    vary,
)
from dpcloak.experiments.runner import RunResult, run_experiment, trial_seed

__all__ = [
    "Claim",
    "Experiment",
    "RunResult",
    "discovery_errors",
    "get_experiment",
    "list_experiments",
    "register",
    "run_experiment",
    "trial_seed",
    "vary",
]
