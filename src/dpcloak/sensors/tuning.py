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

**Missing readings and scale.** Real histories have gaps: a missing reading (NaN) is neither fitted
nor predicted, and the sums run over the readings present (a period with fewer than two is
skipped). A candidate whose spread ``√(2τ)`` exceeds the network's extent (the largest distance
between two sensors) describes heat that covers the whole network evenly; it is dropped with a
warning. The chosen candidate's score is reported as the model's **misfit** (overall and per
period): above :data:`MISFIT_THRESHOLD` the model does not describe the readings, so a ``field``
guarantee calibrated to it does not describe them either.

**Privacy.** The history must be *public* (published open data, a previous year released under
its own guarantee, a pilot with consent): the chosen ``τ`` is part of the published configuration,
and a ``τ`` tuned on private readings would leak through it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import lsq_linear, nnls

from dpcloak._validation import check_array, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.models import LinearModel

__all__ = ["DiffusionChoice", "choose_diffusion_time", "MISFIT_THRESHOLD"]


#: A field model whose held-out prediction leaves more than this fraction of the readings' energy
#: (Σ (ŷ − y)² / Σ y²) unexplained on public history is reported as misfitting (:attr:`DiffusionChoice.fits`).
MISFIT_THRESHOLD = 0.1


@dataclass(frozen=True)
class DiffusionChoice:
    """The chosen diffusion parameter, every candidate's leave-one-sensor-out score and the model's misfit.

    Attributes
    ----------
    diffusion : float
        The candidate with the smallest score.
    candidates, scores : ndarray
        Each candidate tried and its relative prediction error (module docstring).
    periods : int
        Historical periods used (a period needs at least 2 reporting sensors; missing readings are
        skipped, not the period).
    misfit : float
        The chosen candidate's score: the fraction of the readings' energy its held-out prediction
        leaves unexplained (0 = the model predicts every sensor from the others).
    window_misfit : ndarray, shape (periods,)
        The same per period (``nan`` for an all-zero period).
    threshold : float
        :data:`MISFIT_THRESHOLD`; :attr:`fits` is ``misfit <= threshold``.
    too_wide : ndarray
        Candidates refused because heat would spread (``√(2·diffusion)``) beyond the network's extent.

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
    >>> choice.diffusion == choice.candidates[np.argmin(choice.scores)], choice.misfit == choice.scores.min()
    (np.True_, np.True_)
    >>> choice.window_misfit.shape, choice.fits
    ((20,), True)
    """

    diffusion: float
    candidates: NDArray[np.float64]
    scores: NDArray[np.float64]
    periods: int
    misfit: float
    window_misfit: NDArray[np.float64]
    threshold: float
    too_wide: NDArray[np.float64]

    @property
    def fits(self) -> bool:
        """Whether the misfit is within :attr:`threshold`."""
        return self.misfit <= self.threshold

    def summary(self) -> str:
        """One line: the chosen diffusion, the misfit against the threshold, and advice when it misfits.

        Examples
        --------
        >>> choice = DiffusionChoice(diffusion=2e4, candidates=np.array([2e4]), scores=np.array([0.28]), periods=48,
        ...                          misfit=0.28, window_misfit=np.full(48, 0.28), threshold=0.1,
        ...                          too_wide=np.array([]))
        >>> import textwrap
        >>> print(textwrap.fill(choice.summary(), 100))
        diffusion 20000 m²: the model leaves 28 % of the readings unexplained on 48 public periods
        (threshold 10 %): it does not describe these readings; a field guarantee would not hold for them
        (counts of people: use measurement='counts')
        """
        head = (f"diffusion {self.diffusion:g} m²: the model leaves {100 * self.misfit:.3g} % of the readings "
                f"unexplained on {self.periods} public periods (threshold {100 * self.threshold:g} %)")
        if self.fits:
            return head
        return (head + ": it does not describe these readings; a field guarantee would not hold for them (counts of "
                "people: use measurement='counts')")


def _errors(M: NDArray[np.float64], history: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per period: Σ_j (ŷ_j − y_j)² over the present sensors, and Σ_j y_j² (module docstring)."""
    m = M.shape[0]
    owner = np.argmax(M, axis=0)  # the sensor that sees each source most
    err, energy = np.zeros(len(history)), np.zeros(len(history))
    for t, y in enumerate(history):
        present = np.isfinite(y)
        energy[t] = float(np.sum(y[present] ** 2))
        for j in np.flatnonzero(present):
            others, seen = present & (np.arange(m) != j), owner != j
            if not seen.any():
                err[t] += float(y[j]) ** 2
                continue
            err[t] += float(M[j, seen] @ _nonnegative_fit(M[others][:, seen], y[others]) - y[j]) ** 2
    return err, energy


def _nonnegative_fit(A: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``argmin ‖A f − b‖₂`` over ``f ≥ 0``: Lawson–Hanson (scipy's nnls) with room to converge, else BVLS."""
    try:
        return np.asarray(nnls(A, b, maxiter=50 * A.shape[1])[0])
    except RuntimeError:  # nnls stops after maxiter on some ill-conditioned systems
        return np.asarray(lsq_linear(A, b, bounds=(0.0, np.inf), method="bvls").x)


def _extent(model: LinearModel, positions: ArrayLike | None) -> float | None:
    """The network's extent in metres: the largest distance between two sensors (None when unknown)."""
    if positions is not None:
        arr = np.asarray(positions, dtype=float)
    else:
        own = model.sensor_positions
        arr = np.asarray(own if own is not None else np.zeros(0), dtype=float)
        if arr.ndim != 2:  # e.g. a graph model's sensors are its nodes: their coordinates are the domain's
            coords = model.domain.coordinates()
            arr = np.zeros(0) if coords is None or len(coords) != model.shape[0] else np.asarray(coords, float)
    if arr.ndim != 2 or len(arr) < 2:
        return None
    from scipy.spatial.distance import pdist

    return float(pdist(arr).max())


def choose_diffusion_time(
    build: Callable[[float], LinearModel], history: ArrayLike, *, candidates: Sequence[float],
    positions: ArrayLike | None = None, threshold: float = MISFIT_THRESHOLD,
) -> DiffusionChoice:
    """The diffusion parameter that best predicts each sensor from the others on public history.

    Parameters
    ----------
    build : callable
        ``build(diffusion) -> LinearModel`` with one row per sensor, e.g.
        ``lambda d: build_model(layout.positions, ModelSpec(kind="graph", diffusion=d))``.
    history : array_like, shape (k, m)
        Public historical readings, one row per period; NaN marks a missing reading (skipped; a
        period with fewer than 2 readings is skipped).
    candidates : sequence of float
        Values to try (> 0), e.g. ``np.geomspace(1e3, 1e6, 13)`` m². Candidates whose spread
        ``√(2·diffusion)`` exceeds the network's extent (the largest distance between two sensors)
        are dropped with a warning; if none is left the call is refused.
    positions : array_like of shape (m, 2), optional
        Sensor positions in metres for the extent (default: the model's own sensor positions).
    threshold : float
        Misfit above which the model is reported as not describing the readings (default
        :data:`MISFIT_THRESHOLD`).

    Examples
    --------
    >>> from dpcloak.sensors.spec import ModelSpec, build_model
    >>> pos = np.random.default_rng(0).uniform(0, 600, (12, 2))   # 12 sites, about 150 m apart
    >>> truth = build_model(pos, ModelSpec(kind="graph", diffusion=20000.0))
    >>> rng = np.random.default_rng(1)
    >>> crowds = [rng.exponential(50, 12) * (rng.random(12) < 0.3) for _ in range(20)]
    >>> history = np.array([truth.matvec(f) for f in crowds])
    >>> history[3, 5] = np.nan  # a missing reading: skipped, the period still counts
    >>> choice = choose_diffusion_time(lambda d: build_model(pos, ModelSpec(kind="graph", diffusion=d)),
    ...                                history, candidates=[2000.0, 20000.0, 200000.0])
    >>> choice.diffusion, choice.periods
    (20000.0, 20)
    """
    cand = [check_real("candidates", c, low=0.0) for c in candidates]
    if not cand:
        raise InvalidParameterError("candidates must hold at least one value", parameter="candidates")
    limit = check_real("threshold", threshold, low=0.0)
    hist = np.asarray(history, dtype=float)
    if hist.ndim != 2 or hist.shape[1] < 2:
        raise InvalidParameterError(f"history must have shape (k, m) with m >= 2 sensors, got {hist.shape}",
                                    parameter="history")
    if np.any(np.isinf(hist)):
        raise InvalidParameterError("history must be finite numbers or NaN (missing)", parameter="history")
    usable = hist[np.sum(np.isfinite(hist), axis=1) >= 2]
    if len(usable) == 0:
        raise InvalidParameterError("history has no period where at least 2 sensors reported", parameter="history")
    check_array("history", np.nan_to_num(usable), nonnegative=True)
    if not np.any(np.nan_to_num(usable)):
        raise InvalidParameterError("history is all zero: it cannot tell diffusion parameters apart",
                                    parameter="history")
    extent = _extent(build(cand[0]), positions)
    wide = [c for c in cand if extent is not None and np.sqrt(2 * c) > extent]
    kept = [c for c in cand if c not in wide]
    if wide:
        spread = ", ".join(f"{c:g} m² (~{np.sqrt(2 * c):.0f} m)" for c in wide)
        if not kept:
            raise InvalidParameterError(f"every candidate spreads beyond the network's extent of {extent:.0f} m: "
                                        f"{spread}; choose candidates with sqrt(2 x diffusion) <= {extent:.0f} m",
                                        parameter="candidates", allowed=f"spreads <= {extent:.0f} m")
        warnings.warn(f"candidates wider than the network's extent of {extent:.0f} m dropped: {spread}",
                      stacklevel=2)
    per_candidate = []
    for c in kept:
        M = build(c).todense()
        if M.shape[0] != usable.shape[1]:
            raise InvalidParameterError(f"build({c:g}) has {M.shape[0]} sensors but history has {usable.shape[1]}",
                                        parameter="history", allowed=f"{M.shape[0]} sensors", got=usable.shape[1])
        per_candidate.append(_errors(M, usable))
    scores = np.array([err.sum() / energy.sum() for err, energy in per_candidate])
    best = int(np.argmin(scores))
    err, energy = per_candidate[best]
    with np.errstate(invalid="ignore", divide="ignore"):
        window = np.where(energy > 0, err / np.where(energy > 0, energy, 1.0), np.nan)
    return DiffusionChoice(diffusion=kept[best], candidates=np.asarray(kept), scores=scores, periods=len(usable),
                           misfit=float(scores[best]), window_misfit=window, threshold=limit,
                           too_wide=np.asarray(wide, dtype=float))
