r"""Recovery of a map of people from a network's private readings, with an EMD-scale uncertainty.

Recovery is Gilbert & McMillan's Algorithm 1 (basis pursuit denoising) on the sensors that reported,
``min Σ f  s.t. ‖M_P f − ỹ_P‖₂ ≤ r, f ≥ 0`` (no upper bound: counts of people), where ``P`` is the
set of present sensors and

.. math:: r = \sigma \sqrt{F^{-1}_{\chi^2_{|P|}}(1 - \beta)} + \tfrac{g}{2}\sqrt{|P|}

covers the discrete Gaussian noise (its variance is below σ², Canonne, Kamath & Steinke 2020;
treated as Gaussian for the χ² quantile) and the rounding of each reading to the grid ``g``.

**Uncertainty, in metres.** A parametric bootstrap on the released data only (post-processing,
no privacy cost): ``B`` simulated noise vectors ``ν_b ~ N(0, s² I)`` are added to ``M_P f̂``, each
is recovered to ``f̂_b`` (warm-started from ``f̂``), and the uncertainty is the median of
``EMD(f̂, f̂_b)`` over the source locations (metres: the typical distance the map's people would
move between plausible answers; ``uncertainty_90`` is their split-conformal 90 % value, the
``⌈0.9 (B + 1)⌉``-th smallest of the ``B`` values: an error exchangeable with the draws' is below it with
probability at least 90 % when ``B ≥ 9``, where the sample's own 90th percentile covers only
``(0.9 B + 0.1)/(B + 1)``, 83 % at ``B = 10``). It measures how stable the map is under the noise, not the
distance to the unknown truth. The scale ``s`` includes the model's misfit declared for the network:
``s = σ``, and a field network declared with a misfit ``μ`` on public history
(:func:`~dpcloak.sensors.choose_diffusion_time`) adds ``μ‖ỹ_P‖²/|P|`` to ``s²``. A misfit the readings of
one window cannot show (a model whose non-negative maps also produce the true readings, such as graph
diffusion with the wrong τ: ``exp(−2τL) f = exp(−τL) (exp(−τL) f)``) is not in it unless it is declared
(``benchmarks/bench_coverage.py`` measures the coverage either way).

The stated uncertainty is the larger of that spread and the spread of ``EMD(f̂_b, f̂_{b+1})`` between
consecutive draws: the bootstrap around ``f̂`` understates the error because ``f̂`` (sparse, fitted) is an
easier truth for the recovery than the real one, while two independent recoveries each carry their own
noise, as ``f̂`` does against the truth. How often the 90 % value covers the truth, well-specified and
misspecified, with and without a declared misfit, is measured by ``benchmarks/bench_coverage.py``
(results in the documentation's page on measurement kinds).

For a network declared with a ``diffusion_range``, draw ``b`` takes its readings from the model at the
range's low end (even ``b``) or high end (odd ``b``), ``M_lo f̂`` or ``M_hi f̂``, and is recovered with the
point model, so the spread includes the error of recovering with ``diffusion`` when the readings come from
another model of the range.

**No uncertainty is stated for a least-residual map.** When no non-negative map of the model comes
within the noise of the readings, the readings are not what the model produces, and a bootstrap
around the least-residual map would measure the stability of a wrong answer (a few metres beside an
error of tens). Its ``uncertainty`` and ``uncertainty_90`` are ``nan`` and every output shows
:attr:`NetworkRecovery.uncertainty_text`: "not stated: model misfit X %".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike, as_generator
from dpcloak._validation import check_int, check_real
from dpcloak.errors import ConvergenceError, InvalidParameterError
from dpcloak.models.base import LinearModel

if TYPE_CHECKING:
    from dpcloak.recovery import Recovery
    from dpcloak.sensors.network import SensorNetwork

# The metrics (EMD: a compiled min-cost flow) and the solvers are imported where a map is recovered, not with
# this module: a collector's ingest process reads a network's configuration and never recovers a map.

__all__ = ["NetworkRecovery", "recover_sources", "recover_counts", "total_misfit", "misfit_advice", "uncertainty_words"]


@dataclass(frozen=True)
class NetworkRecovery:
    """A recovered map of people (:meth:`SensorNetwork.recover`).

    Attributes
    ----------
    sources : ndarray, shape (n,)
        People per source location (``f̂ ≥ 0``).
    total : float
        ``Σ f̂``, people.
    distribution : ndarray, shape (n,)
        ``f̂`` scaled to unit mass; uniform when ``degenerate``.
    degenerate : bool
        The estimate is all zero (the empty answer; :mod:`dpcloak.metrics.distribution`).
    uncertainty, uncertainty_90 : float
        Median and 90th percentile of the bootstrap EMD (module docstring), in metres
        (the source domain's distance unit); ``nan`` with ``uncertainty_draws=0`` and for a
        least-residual map (not stated: :attr:`uncertainty_text`).
    uncertainty_draws : int
        Bootstrap draws ``B``.
    readings : ndarray, shape (m,)
        The private readings the map was recovered from (NaN: missing).
    misfit : float
        ``‖M_P f̂ − ỹ_P‖² / ‖ỹ_P‖²``: the fraction of the private readings' energy the map leaves
        unexplained (model misfit and noise together; ``nan`` when every reading is 0).
    status : {"fit", "least-residual", "empty", "private counts"}
        How the map was obtained: ``"fit"`` (BPDN solved within the noise ball), ``"least-residual"``
        (no non-negative map fits the readings within the noise: the model does not explain them; the
        map is the least-residual one and no uncertainty is stated), ``"empty"`` (the
        all-zero answer), ``"private counts"`` (a counts network: the released counts, projected
        onto ≥ 0).
    present : ndarray of bool, shape (m,)
        Sensors whose readings were used (missing rows dropped).
    radius, sigma : float
        Data-fit radius and the mechanism's σ, in people.
    recovery : Recovery
        The underlying BPDN result (solver status, residual, message).
    source_positions : ndarray or None
        ``(n, 2)`` metres of the source locations.

    Examples
    --------
    Returned by :meth:`SensorNetwork.recover`:

    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(
    ...     sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]],
    ...     relation=Relation.move(150.0), epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> result = net.recover(net.privatize([10.0, 20.0, 30.0, 5.0], rng=1, simulation=True), uncertainty_draws=0)
    >>> isinstance(result, NetworkRecovery), result.sources.shape, round(float(result.distribution.sum()), 12)
    (True, (4,), 1.0)
    >>> result.present.tolist(), result.degenerate
    ([True, True, True, True], False)
    """

    sources: NDArray[np.float64]
    total: float
    distribution: NDArray[np.float64]
    degenerate: bool
    uncertainty: float
    uncertainty_90: float
    uncertainty_draws: int
    readings: NDArray[np.float64]
    misfit: float
    status: str
    present: NDArray[np.bool_]
    radius: float
    sigma: float
    recovery: Recovery
    source_positions: NDArray[np.float64] | None

    @property
    def uncertainty_text(self) -> str:
        """The uncertainty as every output shows it: ``"±12 m (median), 30 m (90 %)"``, or why none is stated.

        Examples
        --------
        >>> import numpy as np
        >>> from dpcloak.sensors import Relation, SensorNetwork
        >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]],
        ...                                      diffusion=2000.0, relation=Relation.move(150.0), epsilon=1.0,
        ...                                      delta=1e-6, budget=(10.0, 1e-5))
        >>> odd = net.recover(np.array([500.0, 0.0, 500.0]), uncertainty_draws=4, rng=0)  # no diffusion gives this
        >>> odd.status, odd.uncertainty_text
        ('least-residual', 'not stated: model misfit 3.7 %')
        """
        return uncertainty_words(uncertainty=self.uncertainty, uncertainty_90=self.uncertainty_90, status=self.status,
                                 misfit=self.misfit, draws=self.uncertainty_draws)


def uncertainty_words(*, uncertainty: float | None, uncertainty_90: float | None, status: str | None,
                      misfit: float | None, draws: int | None = None) -> str:
    """A map's uncertainty in words, as every output shows it (:attr:`NetworkRecovery.uncertainty_text`).

    ``None`` reads as not known (a stored map closed before its status was recorded); ``draws`` is the
    number of bootstrap draws when known.

    Examples
    --------
    >>> uncertainty_words(uncertainty=12.4, uncertainty_90=30.2, status="fit", misfit=0.01)
    '±12 m (median), 30 m (90 %)'
    >>> uncertainty_words(uncertainty=None, uncertainty_90=None, status="least-residual", misfit=0.37)
    'not stated: model misfit 37 %'
    >>> uncertainty_words(uncertainty=None, uncertainty_90=None, status="fit", misfit=0.01, draws=0)
    'n/a (no bootstrap draws)'
    """
    low = math.nan if uncertainty is None else uncertainty
    high = math.nan if uncertainty_90 is None else uncertainty_90
    if math.isfinite(low) and math.isfinite(high):
        return f"±{low:.0f} m (median), {high:.0f} m (90 %)"
    if status == "least-residual":
        return "not stated: model misfit " + ("unknown" if misfit is None or not math.isfinite(misfit)
                                              else f"{100 * misfit:.2g} %")
    return "n/a (no bootstrap draws)" if draws == 0 else "n/a"


def _inputs(private_readings: ArrayLike, present: ArrayLike | None, uncertainty_draws: int,
            m: int) -> tuple[NDArray[np.float64], NDArray[np.bool_], int]:
    """The readings ``(m,)``, the present sensors and the number of bootstrap draws, validated."""
    try:
        y = np.asarray(private_readings, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameterError("private_readings must be numbers (NaN for a missing sensor)",
                                    parameter="private_readings") from None
    if y.shape != (m,):
        raise InvalidParameterError(f"private_readings must have shape ({m},), got {y.shape}",
                                    parameter="private_readings")
    if np.any(np.isinf(y)):
        where = np.flatnonzero(np.isinf(y))[:3].tolist()
        raise InvalidParameterError(f"private_readings must be finite numbers or NaN (a missing sensor), got an "
                                    f"infinite value at sensor(s) {where}", parameter="private_readings",
                                    allowed="finite or NaN", got=float(y[where[0]]))
    draws = check_int("uncertainty_draws", uncertainty_draws, minimum=0, maximum=MAX_UNCERTAINTY_DRAWS)
    return y, _present(y, present, m), draws


MAX_UNCERTAINTY_DRAWS = 10_000
"""Upper limit of the bootstrap draws of a map's uncertainty (each is a recovery; 10 is the default)."""


def _check_warm_start(warm_start: object) -> None:
    if warm_start is not None and not isinstance(warm_start, NetworkRecovery):
        raise InvalidParameterError(f"warm_start must be a NetworkRecovery (the previous period's result) or None, "
                                    f"got {type(warm_start).__name__}", parameter="warm_start",
                                    allowed="NetworkRecovery or None", got=warm_start)


def _misfit(residual: float, readings: NDArray[np.float64]) -> float:
    """Squared residual over the readings' energy (nan for all-zero readings)."""
    energy = float(readings @ readings)
    return residual**2 / energy if energy > 0 else math.nan


def _median_and_90(spread: list[float]) -> tuple[float, float]:
    """Median of the bootstrap EMDs and their split-conformal 90 % value (nan without draws).

    The 90 % value is the ``⌈0.9 (n + 1)⌉``-th smallest of the ``n`` values (the largest when that exceeds
    ``n``): a new value exchangeable with them is at most it with probability ``⌈0.9 (n + 1)⌉ / (n + 1) ≥ 0.9``
    (at most ``n / (n + 1)`` when ``n < 9``). The 90th percentile of the sample itself would cover only
    about ``(0.9 n + 0.1) / (n + 1)``: 83 % for 10 draws.

    Examples
    --------
    >>> _median_and_90([float(v) for v in range(1, 11)])  # 10 values: the 10th smallest (⌈9.9⌉)
    (5.5, 10.0)
    >>> _median_and_90([float(v) for v in range(1, 20)])[1]  # 19 values: the 18th smallest (⌈18⌉)
    18.0
    """
    if not spread:
        return math.nan, math.nan
    rank = min(math.ceil(0.9 * (len(spread) + 1) - 1e-9), len(spread))
    return float(np.median(spread)), float(np.sort(spread)[rank - 1])


def _present(y: NDArray[np.float64], present: ArrayLike | None, m: int) -> NDArray[np.bool_]:
    if present is None:
        mask = np.isfinite(y)
    else:
        mask = np.asarray(present)
        if mask.dtype != bool or mask.shape != (m,):
            raise InvalidParameterError(f"present must be a boolean array of shape ({m},), got {mask.dtype} "
                                        f"of shape {mask.shape}", parameter="present")
        if not np.all(np.isfinite(y[mask])):
            raise InvalidParameterError("private_readings must be finite at every present sensor",
                                        parameter="private_readings")
    if not mask.any():
        raise InvalidParameterError("no sensor is present: nothing to recover from", parameter="present",
                                    allowed="at least one present sensor")
    return mask


def _solve(model: LinearModel, y: NDArray[np.float64], radius: float, warm: Recovery | None) -> Recovery:
    """BPDN with counts' bounds (0, ∞); an answer outside them is an error, never a map of negative people."""
    from dpcloak.recovery import bpdn

    rec = bpdn(model, y, radius=radius, bounds=(0.0, None), warm_start=warm)
    if rec.x.size and float(rec.x.min()) < -1e-9 * max(1.0, float(np.abs(rec.x).max())):
        raise ConvergenceError(
            f"recovery returned {float(rec.x.min()):.6g} at a location, outside the bounds (0, inf) "
            f"({rec.message})"
        )
    return rec


def recover_sources(
    network: SensorNetwork,
    private_readings: ArrayLike,
    *,
    present: ArrayLike | None = None,
    warm_start: NetworkRecovery | None = None,
    uncertainty_draws: int = 10,
    rng: RngLike = None,
) -> NetworkRecovery:
    """Recover people per source location from one period's private readings (module docstring).

    Parameters
    ----------
    network : SensorNetwork
    private_readings : array_like, shape (m,)
        Output of :meth:`SensorNetwork.privatize` (NaN where a sensor sent nothing).
    present : array_like of bool, optional
        Which sensors reported (default: the finite readings).
    warm_start : NetworkRecovery, optional
        The previous period's result; used when the same sensors are present.
    uncertainty_draws : int, default 10
        Bootstrap draws for the uncertainty (0 to skip).
    rng : Generator or int, optional
        Randomness of the bootstrap (analysis only, nothing is released).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(
    ...     sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]], relation=Relation.move(150.0),
    ...     epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> readings = net.privatize([10.0, 20.0, np.nan, 5.0], rng=1, simulation=True)  # sensor 2 sent nothing
    >>> result = recover_sources(net, readings, uncertainty_draws=0)
    >>> result.sources.shape, bool(np.all(result.sources >= 0))
    ((4,), True)
    """
    from dpcloak.metrics import as_distribution, emd
    from dpcloak.recovery import choose_radius

    _check_warm_start(warm_start)
    y, mask, draws = _inputs(private_readings, present, uncertainty_draws, network.n_sensors)
    model = network.rows_model(mask)
    p = int(mask.sum())
    sigma = network.sigma
    radius = choose_radius(m=p, sigma=sigma).radius + 0.5 * network.resolution * math.sqrt(p)
    previous = None
    if isinstance(warm_start, NetworkRecovery) and np.array_equal(warm_start.present, mask):
        previous = warm_start.recovery
    rec = _solve(model, y[mask], radius, previous)
    dist = as_distribution(rec.x)
    status = "empty" if dist.degenerate else ("fit" if rec.feasible else "least-residual")
    scale = sigma
    if status == "least-residual":  # the readings are not what the model produces: no uncertainty is stated
        draws = 0
    if network.misfit:  # the model's misfit on public history: that share of the readings' energy is not M f
        scale = math.sqrt(scale**2 + network.misfit * float(y[mask] @ y[mask]) / p)
    domain = network.model.domain
    spread: list[float] = []
    between: list[float] = []
    if draws:
        gen = as_generator(rng)
        fitted = model.matvec(rec.x)
        # a declared diffusion range: the draws' readings come from the models at its ends in turn (the guarantee's
        # models), recovered with the point model, so the uncertainty includes the model's own uncertainty
        ends = [m[mask] @ rec.x for m in network.range_models()] or [fitted]
        known: dict[tuple[bytes, bytes], float] = {}

        def distance(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
            key = (a.tobytes(), b.tobytes())  # the same pair of maps as before: the same (deterministic) EMD
            if key not in known:
                known[key] = emd(a, b, domain)
            return known[key]

        empty = np.zeros(network.n_sources)
        start, last = rec, None
        for b in range(draws):
            noisy = ends[b % len(ends)] + gen.normal(0.0, scale, p)
            if float(np.linalg.norm(noisy)) <= radius:  # f = 0 is in the ball: the only optimum with f ≥ 0
                x = empty
            else:
                start = _solve(model, noisy, radius, start)  # draws resemble each other more than the estimate
                x = start.x
            spread.append(distance(rec.x, x))
            if last is not None:
                between.append(distance(last, x))
            last = x
    unc, unc90 = (max(a, b) for a, b in zip(_median_and_90(spread), _median_and_90(between), strict=True))
    return NetworkRecovery(
        sources=rec.x, total=float(rec.x.sum()), distribution=dist.p, degenerate=dist.degenerate, uncertainty=unc,
        uncertainty_90=unc90, uncertainty_draws=draws, readings=y, misfit=_misfit(rec.residual, y[mask]),
        status=status, present=mask, radius=radius, sigma=sigma,
        recovery=rec, source_positions=network.source_positions,
    )


def recover_counts(
    network: SensorNetwork,
    private_readings: ArrayLike,
    *,
    present: ArrayLike | None = None,
    uncertainty_draws: int = 10,
    rng: RngLike = None,
    noise_std: float | None = None,
) -> NetworkRecovery:
    r"""The map of a ``counts`` network: each present site's private count projected onto ≥ 0.

    Post-processing of the released counts only. The projection never moves a count away from the
    true one: the truth ``y ≥ 0``, so ``|max(ỹ, 0) − y| ≤ |ỹ − y|`` site by site (the map is never
    worse than the private counts themselves). Missing sites are 0 in the map and ``False`` in
    ``present``. The uncertainty is a parametric bootstrap of the same projection under the
    mechanism's own noise (seeded exact draws; nothing is released), as EMD in metres.

    ``noise_std`` (count units) replaces the network's per-reading noise when the counts carry other noise, e.g.
    a continual counter's decoded increments (:meth:`~dpcloak.privacy.continual.ContinualCounter.range_std` of
    one window): the result's ``sigma`` is then ``noise_std`` and the bootstrap draws normal noise of that
    standard deviation (a sum of many independent discrete Gaussians, as the decoded increment's noise is).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcloak.sensors import SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]],
    ...                                      measurement="counts", epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5))
    >>> result = recover_counts(net, [4.0, -2.0, np.nan], uncertainty_draws=0)
    >>> result.sources.tolist(), result.present.tolist(), result.status
    ([4.0, 0.0, 0.0], [True, True, False], 'private counts')
    >>> recover_counts(net, [4.0, -2.0, np.nan], uncertainty_draws=3, rng=0, noise_std=2.5).sigma
    2.5
    """
    from dpcloak.metrics import as_distribution, emd
    from dpcloak.recovery import Recovery

    y, mask, draws = _inputs(private_readings, present, uncertainty_draws, network.n_sensors)
    if noise_std is not None:
        noise_std = check_real("noise_std", noise_std, low=0.0)
    x = np.zeros(network.n_sensors)
    x[mask] = np.maximum(y[mask], 0.0)
    dist = as_distribution(x)
    domain = network.model.domain
    spread = []
    if draws:
        gen = as_generator(rng)
        for _ in range(draws):
            again = np.zeros(network.n_sensors)
            size = int(mask.sum())
            noise = (network.mechanism.privatize(np.zeros(size), rng=gen) if noise_std is None
                     else gen.normal(0.0, noise_std, size))
            again[mask] = np.maximum(x[mask] + noise, 0.0)
            spread.append(emd(x, again, domain))
    residual = float(np.linalg.norm(x[mask] - y[mask]))
    rec = Recovery(x=x, objective=float(x.sum()), residual=residual, radius=math.nan, radius_policy="explicit",
                   n_iter=0, converged=True, message="private counts projected onto >= 0 (no model)", solve_time=0.0,
                   feasible=True, solver="projection", lower_bound=math.nan)
    unc, unc90 = _median_and_90(spread)
    return NetworkRecovery(
        sources=x, total=float(x.sum()), distribution=dist.p, degenerate=dist.degenerate, uncertainty=unc,
        uncertainty_90=unc90, uncertainty_draws=draws, readings=y,
        misfit=_misfit(residual, y[mask]), status="empty" if dist.degenerate else "private counts", present=mask,
        radius=math.nan, sigma=network.sigma if noise_std is None else noise_std,
        recovery=rec, source_positions=network.source_positions,
    )


def total_misfit(results: Sequence[NetworkRecovery]) -> float:
    """The misfit of a series of maps together: Σ residual² / Σ ‖ỹ‖² (nan when every reading is 0).

    Examples
    --------
    >>> import numpy as np
    >>> from dpcloak.sensors import SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0]], measurement="counts", epsilon=1.0,
    ...                                      delta=0.0, budget=(10.0, 1e-5))
    >>> maps = [net.recover(np.array(y), uncertainty_draws=0) for y in ([3.0, -1.0], [4.0, 0.0])]
    >>> round(total_misfit(maps), 6)  # 1² of 3² + 1² + 4²
    0.038462
    """
    residual = sum(r.recovery.residual**2 for r in results)
    energy = sum(float(np.sum(r.readings[r.present] ** 2)) for r in results)
    return residual / energy if energy > 0 else math.nan


def misfit_advice(network: SensorNetwork, results: Sequence[NetworkRecovery]) -> str | None:
    """A warning when a field network's maps do not fit its readings: some map is least-residual (no map of the
    model comes within the noise of the readings); ``None`` when every map fits, and for counts. The total
    misfit (:func:`total_misfit`, noise included) is quoted with :data:`~dpcloak.sensors.tuning.MISFIT_THRESHOLD`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]], diffusion=2000.0,
    ...                                      relation=Relation.move(150.0), epsilon=1.0, delta=1e-6,
    ...                                      budget=(10.0, 1e-5))
    >>> odd = net.recover(np.array([500.0, 0.0, 500.0]), uncertainty_draws=0)  # no diffusion gives this
    >>> odd.status, misfit_advice(net, [odd]) is not None
    ('least-residual', True)
    """
    from dpcloak.sensors.tuning import MISFIT_THRESHOLD

    if network.measurement == "counts":
        return None
    out_of_reach = sum(r.status == "least-residual" for r in results)
    total = total_misfit(results)
    if not out_of_reach:
        return None
    return (f"{out_of_reach} of {len(results)} maps are least-residual and the maps leave {100 * total:.3g} % of the "
            f"readings' energy unexplained (threshold {100 * MISFIT_THRESHOLD:g} %): the model does not describe "
            "these readings, so its guarantee (which holds if the readings follow the model) and the maps are in "
            "doubt; for counts of people use the counts measurement")
