r"""Choosing the diffusion parameter from public or historical readings, not by hand.

**Method: leave-one-sensor-out prediction.** For each candidate ``τ`` the model ``M(τ)`` is asked
to predict every sensor's reading from the others': for each historical period ``t`` and sensor
``j``, non-negative least squares fits ``f ≥ 0`` to the other sensors' readings
(``min ‖M_{−j,S_j} f − y_{t,−j}‖₂``) and predicts ``ŷ_{t,j} = M_{j,S_j} f``, where ``S_j`` are the
sources that some other sensor sees most (``argmax_s M[s, c] ≠ j``): the people only sensor
``j`` would see are what is being predicted, so they cannot be fitted (otherwise a nearly
unobserved source takes any value and the prediction is arbitrary). The score is the relative
prediction error ``Σ_{t,j} (ŷ_{t,j} − y_{t,j})² / Σ_{t,j} y_{t,j}²``, and the chosen ``τ`` is the
candidate with the smallest score. Too small a ``τ`` carries no information from one sensor to
the next (the prediction is 0); too large a ``τ`` blurs every site into the average; the data
decide in between. It is a model-selection heuristic, not an estimator with a guarantee: when
heat barely reaches the neighbouring sensors the score is flat and the choice is only good to
within a neighbouring candidate (within a factor 3 in the tests), and a nearly uniform crowd
favours a larger ``τ`` (every model predicts a constant field).

**Privacy.** The history must be *public* (published open data, a previous year released under
its own guarantee, a pilot with consent): the chosen ``τ`` is part of the published configuration,
and a ``τ`` tuned on private readings would leak through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import nnls

from dpcloak._validation import check_array, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.models import LinearModel

__all__ = ["DiffusionChoice", "choose_diffusion_time"]


@dataclass(frozen=True)
class DiffusionChoice:
    """The chosen diffusion parameter and every candidate's leave-one-sensor-out score.

    Attributes
    ----------
    diffusion : float
        The candidate with the smallest score.
    candidates, scores : ndarray
        Each candidate and its relative prediction error (module docstring).
    periods : int
        Historical periods used (rows with a missing reading are skipped).

    Examples
    --------
    Returned by :func:`choose_diffusion_time`:

    >>> from dpcloak.sensors.spec import ModelSpec, build_model
    >>> pos = np.random.default_rng(0).uniform(0, 600, (12, 2))
    >>> truth = build_model(pos, ModelSpec(kind="graph", diffusion=20000.0))
    >>> rng = np.random.default_rng(1)
    >>> history = np.array([truth.matvec(rng.exponential(50, 12) * (rng.random(12) < 0.3)) for _ in range(20)])
    >>> choice = choose_diffusion_time(lambda d: build_model(pos, ModelSpec(kind="graph", diffusion=d)),
    ...                                history, candidates=[2000.0, 20000.0, 200000.0])
    >>> isinstance(choice, DiffusionChoice), choice.candidates.tolist(), choice.periods
    (True, [2000.0, 20000.0, 200000.0], 20)
    >>> choice.diffusion == choice.candidates[np.argmin(choice.scores)]
    np.True_
    """

    diffusion: float
    candidates: NDArray[np.float64]
    scores: NDArray[np.float64]
    periods: int


def _score(M: NDArray[np.float64], history: NDArray[np.float64]) -> float:
    m = M.shape[0]
    owner = np.argmax(M, axis=0)  # the sensor that sees each source most
    err = 0.0
    for j in range(m):
        others, seen = np.arange(m) != j, owner != j
        if not seen.any():
            err += float(np.sum(history[:, j] ** 2))
            continue
        for y in history:
            f, _ = nnls(M[others][:, seen], y[others])
            err += float(M[j, seen] @ f - y[j]) ** 2
    return err / float(np.sum(history**2))


def choose_diffusion_time(
    build: Callable[[float], LinearModel], history: ArrayLike, *, candidates: Sequence[float]
) -> DiffusionChoice:
    """The diffusion parameter that best predicts each sensor from the others on public history.

    Parameters
    ----------
    build : callable
        ``build(diffusion) -> LinearModel`` with one row per sensor, e.g.
        ``lambda d: build_model(layout.positions, ModelSpec(kind="graph", diffusion=d))``.
    history : array_like, shape (k, m)
        Public historical readings, one row per period (rows containing NaN are skipped).
    candidates : sequence of float
        Values to try (> 0), e.g. ``np.geomspace(1e3, 1e6, 13)`` m².

    Examples
    --------
    >>> from dpcloak.sensors.spec import ModelSpec, build_model
    >>> pos = np.random.default_rng(0).uniform(0, 600, (12, 2))   # 12 sites, about 150 m apart
    >>> truth = build_model(pos, ModelSpec(kind="graph", diffusion=20000.0))
    >>> rng = np.random.default_rng(1)
    >>> crowds = [rng.exponential(50, 12) * (rng.random(12) < 0.3) for _ in range(20)]
    >>> history = np.array([truth.matvec(f) for f in crowds])
    >>> choice = choose_diffusion_time(lambda d: build_model(pos, ModelSpec(kind="graph", diffusion=d)),
    ...                                history, candidates=[2000.0, 20000.0, 200000.0])
    >>> choice.diffusion
    20000.0
    """
    cand = [check_real("candidates", c, low=0.0) for c in candidates]
    if not cand:
        raise InvalidParameterError("candidates must hold at least one value")
    hist = np.asarray(history, dtype=float)
    if hist.ndim != 2 or hist.shape[1] < 2:
        raise InvalidParameterError(f"history must have shape (k, m) with m >= 2 sensors, got {hist.shape}")
    complete = hist[np.all(np.isfinite(hist), axis=1)]
    if len(complete) == 0:
        raise InvalidParameterError("history has no period where every sensor reported")
    complete = check_array("history", complete, nonnegative=True)
    if not np.any(complete):
        raise InvalidParameterError("history is all zero: it cannot tell diffusion parameters apart")
    scores = []
    for c in cand:
        M = build(c).todense()
        if M.shape[0] != complete.shape[1]:
            raise InvalidParameterError(f"build({c:g}) has {M.shape[0]} sensors but history has {complete.shape[1]}")
        scores.append(_score(M, complete))
    arr = np.asarray(scores)
    return DiffusionChoice(diffusion=cand[int(np.argmin(arr))], candidates=np.asarray(cand), scores=arr,
                           periods=len(complete))
