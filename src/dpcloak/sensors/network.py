r"""One object for a sensor network's privacy flow: model, relation, mechanism, budget and recovery.

The flow of Gilbert & McMillan / thesis Part III (``f → M f → each sensor adds noise → recover f̂``) with
every public choice held in one place, serialisable (:mod:`dpcloak.sensors.config`), so that the
configuration file alone determines the privacy guarantee.
"""

from __future__ import annotations

from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._rng import RngLike
from dpcloak._validation import check_choice, check_int, check_real
from dpcloak.errors import InvalidParameterError
from dpcloak.models import DenseModel, LinearModel
from dpcloak.privacy.accounting import (
    PrivacyReport,
    PrivacySpent,
    ReadingAccountant,
    privacy_report,
)
from dpcloak.privacy.discrete import DiscreteLaplaceMechanism, RandBelow
from dpcloak.privacy.mechanisms import check_exact_doubles
from dpcloak.privacy.sensitivity import Relation, relation_sensitivity
from dpcloak.sensors.layout import SensorLayout, layout_from_coordinates
from dpcloak.sensors.measurement import (
    MEASUREMENTS,
    check_unit,
    count_guarantee_text,
    field_guarantee_text,
    noise_std,
)
from dpcloak.sensors.release import ACCOUNTANT, ReleaseSpec
from dpcloak.sensors.result import NetworkRecovery, recover_counts, recover_sources
from dpcloak.sensors.spec import ModelSpec, build_model, counts_model, range_sensitivity

__all__ = ["SensorNetwork", "ACCOUNTANT"]

#: A field network's Δ2 at or below this fraction of the largest ‖M e_s‖₂ (what one source puts in the
#: readings) is refused: the noise calibrated to it would be no noise at the readings' scale.
NEGLIGIBLE_SENSITIVITY = 1e-6


class SensorNetwork:
    r"""A sensor network's public privacy configuration and its release and recovery operations.

    Parameters
    ----------
    model : LinearModel
        Forward model ``y = M f``: rows are sensors, columns source locations; ``f`` counts people.
    relation : Relation
        Neighbouring count vectors, with α's unit (:class:`~dpcloak.privacy.sensitivity.Relation`).
    epsilon, delta : float
        (ε, δ) of one release (all sensors' readings of one period), ε > 0, δ ∈ (0, 1).
    budget : (float, float)
        ``(epsilon_total, delta_total)``: releases are refused once the composed ε at
        ``delta_total`` would exceed ``epsilon_total``.
    reading_range : (low, high), default (0, None)
        Every reading is clipped to it before noise is added (``None``: no upper limit).
    resolution : float, optional
        Grid of the exact discrete Gaussian, in people (default Δ2/1024).
    layout, spec : optional
        How the model was built from coordinates (set by :meth:`from_coordinates`; needed to
        serialise).
    ledger : str or os.PathLike, optional
        A :class:`~dpcloak.privacy.ledger.BudgetLedger` file that keeps the count of vector releases
        across objects, processes and restarts (written before each release), through the one
        accountant (:class:`~dpcloak.privacy.ReadingAccountant`). Default: the count lives in this
        object only, and a network rebuilt from its configuration starts again at zero.

    Attributes
    ----------
    delta2 : float
        Exact ℓ2 sensitivity of the whole reading vector under ``relation``, in people.
    mechanism : DiscreteGaussianMechanism
        The exact discrete Gaussian calibrated to ``delta2`` for ``n_sensors`` coordinates.
    sigma : float
        Its σ in people.

    Privacy guarantee
    -----------------
    One release of all sensors is (ε, δ)-DP for count vectors that are neighbours under
    ``relation`` (thesis Proposition 7.1 with the exact Δ2 of the relation; Canonne, Kamath &
    Steinke 2020 for the discrete Gaussian: ½(Δ_grid/σ)²-zCDP converted to (ε, δ)). Clipping each
    reading to ``reading_range`` is 1-Lipschitz per coordinate, so it cannot raise Δ2. ``k``
    releases compose as ``k·ρ``-zCDP (:meth:`guarantee`, closed form); the budget is checked *before* anything
    is released. **What is counted is vector releases, not readings**: every period (a row of
    :meth:`privatize`) in which any sensor releases is charged as one release of the whole vector at the
    full Δ2, whichever sensors took part — a sub-vector of the present sensors has sensitivity at most
    Δ2 (it is a sub-vector of the difference for every neighbouring pair), so the charge never
    undercounts, whether the sensors report together, in alternate periods, or some never. Single
    readings (:meth:`privatize_reading`) are one vector release each, unless they name the same
    ``window`` and distinct sensors (then they are one release of that window's sub-vector).

    Examples
    --------
    Four counters on a 100 m square; the privacy unit is one person moved by up to 150 m:

    >>> from dpcloak.sensors import Relation
    >>> net = SensorNetwork.from_coordinates(
    ...     sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]],
    ...     relation=Relation.move(150.0), epsilon=1.0, delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0)
    >>> net.n_sensors, net.n_sources
    (4, 4)

    A release draws exact noise from the OS CSPRNG (no seed) and is charged as one vector release,
    whichever sensors sent a reading (NaN: nothing sent; a period with no reading at all is not charged):

    >>> released = net.privatize([10.0, 20.0, np.nan, 5.0])
    >>> released.shape, bool(np.isnan(released[2])), net.releases
    ((4,), True, 1)
    >>> net.privatize([10.0, 20.0, 30.0, 5.0], rng=0)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rng fixes the noise, which is not secure for a release; ...

    Simulations opt in to a seed; recovery gives a map of people per source location:

    >>> simulated = net.privatize([10.0, 20.0, 30.0, 5.0], rng=1, simulation=True)
    >>> result = net.recover(simulated, uncertainty_draws=0)
    >>> result.sources.shape, bool(result.total > 0)
    ((4,), True)
    >>> net.dense_model().shape, net.source_positions.shape  # sources at the 4 sensors, (x, y) metres
    ((4, 4), (4, 2))

    The budget bounds the number of vector releases; a single sensor can send one reading at a time,
    and readings of distinct sensors for the same ``window`` are one release of that window:

    >>> net.max_releases() > 1, net.spent().epsilon <= 10.0
    (True, True)
    >>> before = net.releases
    >>> reading = net.privatize_reading(0, 12.0, window=7)  # what sensor 0 sends for 12 people in window 7
    >>> reading = net.privatize_reading(1, 3.0, window=7)  # sensor 1, same window: the same vector release
    >>> net.releases - before
    1

    The configuration is public and serialisable; it holds no release count (each sensor node keeps
    its own ledger in a deployment, :mod:`dpcloak.service`):

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> again = SensorNetwork.load(net.save(Path(tmp.name) / "network.toml"))
    >>> again.fingerprint() == net.fingerprint() == SensorNetwork.from_dict(net.to_dict()).fingerprint()
    True
    >>> again.releases, net.releases  # vector releases (simulations count too)
    (0, 3)

    Outside a deployment, a ledger file keeps the count across objects and restarts (written before
    each release):

    >>> ledger = Path(tmp.name) / "budget.json"
    >>> first = SensorNetwork.load(Path(tmp.name) / "network.toml", ledger=ledger)
    >>> _ = first.privatize([10.0, 20.0, 30.0, 5.0])
    >>> SensorNetwork.load(Path(tmp.name) / "network.toml", ledger=ledger).releases
    1
    >>> tmp.cleanup()
    """

    def __init__(
        self,
        model: LinearModel,
        *,
        relation: Relation | None = None,
        epsilon: float,
        delta: float,
        budget: tuple[float, float],
        measurement: str = "field",
        max_count_per_person: int = 1,
        reading_unit: str = "people",
        source_unit: str | None = None,
        misfit: float | None = None,
        reading_range: tuple[float, float | None] = (0.0, None),
        resolution: float | None = None,
        layout: SensorLayout | None = None,
        spec: ModelSpec | None = None,
        ledger: str | PathLike[str] | None = None,
    ) -> None:
        if not isinstance(model, LinearModel):
            raise InvalidParameterError(f"model must be a LinearModel, got {type(model).__name__}", parameter="model")
        self.measurement = check_choice("measurement", measurement, MEASUREMENTS)
        self.reading_unit = check_unit("reading_unit", reading_unit)
        self.source_unit = self.reading_unit if source_unit is None else check_unit("source_unit", source_unit)
        self.model = model
        self.layout = layout
        self.spec = spec
        self.misfit = None if misfit is None else check_real("misfit", misfit, low=0.0, low_inclusive=True)
        self.relation: Relation | None
        self.delta2: float
        self.max_count_per_person: int | None
        common: dict[str, Any] = {
            "measurement": self.measurement, "n_sensors": model.shape[0], "epsilon": epsilon, "delta": delta,
            "budget": budget, "reading_range": reading_range, "reading_unit": self.reading_unit,
            "resolution": resolution}
        if self.measurement == "counts":
            if relation is not None:
                raise InvalidParameterError(
                    "relation is for measurement='field'; a counts network protects one person's contribution (at "
                    f"most max_count_per_person counts per window), got relation={relation.describe()!r}",
                    parameter="relation")
            m, n = model.shape
            if m != n or not np.array_equal(model.todense(), np.eye(m)):
                raise InvalidParameterError("a counts network's model must be the identity (each site's map value "
                                            "is its own count); build it with SensorNetwork.from_coordinates",
                                            parameter="model", allowed="the identity")
            self.relation = None
            c = check_int("max_count_per_person", max_count_per_person, minimum=1)
            self.release_spec = ReleaseSpec(sensitivity=float(c), neighbouring="", max_count_per_person=c, **common)
        else:
            if not isinstance(relation, Relation):
                raise InvalidParameterError(f"relation must be a Relation for measurement='field' (what the model's "
                                            f"sensitivity protects), got {type(relation).__name__}",
                                            parameter="relation")
            if max_count_per_person != 1:
                raise InvalidParameterError(f"max_count_per_person is for measurement='counts', got "
                                            f"{max_count_per_person!r} with 'field'", parameter="max_count_per_person")
            self.relation = relation
            delta2 = relation_sensitivity(model, relation)
            if spec is not None and spec.diffusion_range is not None and layout is not None:
                delta2 = max(delta2, range_sensitivity(layout.positions, spec, relation))  # any diffusion in range
            self._check_field_sensitivity(delta2)
            self.release_spec = ReleaseSpec(sensitivity=delta2, neighbouring=relation.describe(), **common)
        self.delta2 = self.release_spec.sensitivity
        self.max_count_per_person = self.release_spec.max_count_per_person
        self.budget = self.release_spec.budget
        self.reading_range = self.release_spec.reading_range
        self.declared_delta = self.release_spec.delta
        self.mechanism = self.release_spec.mechanism
        self._accountant = ReadingAccountant(
            mechanism=self.mechanism, epsilon_budget=self.budget[0], delta_budget=self.budget[1],
            accountant=ACCOUNTANT, ledger=ledger, purpose=(
                f"SensorNetwork vector releases; n_sensors={self.n_sensors}; relation={self.privacy_unit}; "
                f"delta2={self.delta2!r}; epsilon={self.epsilon!r}; delta={self.delta!r}"))
        self._open: tuple[int, set[int]] | None = None  # the window whose vector release single readings fill
        self._dense: NDArray[np.float64] | None = None
        self._rows: tuple[bytes, DenseModel] | None = None
        self._range_dense: tuple[NDArray[np.float64], ...] | None = None

    def _check_field_sensitivity(self, delta2: float) -> None:
        """Refuse a Δ2 that is zero or negligible against what one source puts in the readings."""
        assert self.relation is not None
        scale = relation_sensitivity(self.model, Relation.add_remove())  # the largest ‖M e_s‖₂
        what = f"the {self.spec.describe()}" if self.spec is not None else "the model"
        if not delta2 > NEGLIGIBLE_SENSITIVITY * scale:
            raise InvalidParameterError(
                f"Δ2 = {delta2:.3g} {self.reading_unit} under the relation ({self.relation.describe()}) is "
                f"{'zero' if delta2 == 0 else 'negligible'} against the readings one {self.source_unit} produces "
                f"(up to {scale:.3g} {self.reading_unit} in ℓ2): with {what} the relation barely changes the "
                "readings, so noise calibrated to it would hide nothing the data shows; choose a diffusion within the "
                "network's scale (choose_diffusion_time) or measurement='counts' for count data",
                parameter="relation", got=delta2
            )

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def from_coordinates(
        cls,
        *,
        sensors: SensorLayout | ArrayLike,
        relation: Relation | None = None,
        epsilon: float,
        delta: float,
        budget: tuple[float, float],
        measurement: str = "field",
        max_count_per_person: int = 1,
        reading_unit: str = "people",
        source_unit: str | None = None,
        misfit: float | None = None,
        model: str = "graph",
        diffusion: float | None = None,
        diffusion_range: tuple[float, float] | None = None,
        sources: str = "sensors",
        graph: str = "knn",
        k: int = 4,
        spacing: float | None = None,
        margin: float = 0.0,
        room: tuple[tuple[float, float], tuple[float, float]] | None = None,
        lonlat: bool = False,
        names: list[str] | None = None,
        centre: tuple[float, float] | None = None,
        colocated: str = "refuse",
        merge_within: float = 1.0,
        reading_range: tuple[float, float | None] = (0.0, None),
        resolution: float | None = None,
        ledger: str | PathLike[str] | None = None,
    ) -> SensorNetwork:
        """A network from sensor coordinates (see :mod:`dpcloak.sensors.measurement` for the two kinds).

        Parameters
        ----------
        sensors : SensorLayout or array_like of shape (m, 2)
            A layout (:func:`~dpcloak.sensors.read_sensors_csv`), or coordinates: ``(x, y)`` metres,
            or ``(lon, lat)`` degrees with ``lonlat=True`` (projected by :mod:`dpcloak.geo`).
        measurement : {"field", "counts"}
            ``"counts"``: readings are counts of people; the guarantee is for one person's contribution
            (``max_count_per_person`` counts per window), unconditional, and the map is the private
            counts per site (no model, no ``relation``/``diffusion``). ``"field"``: a diffusing
            quantity; the seeds' model-based guarantee under ``relation``, which holds if the
            readings follow the model.
        relation, epsilon, delta, budget, max_count_per_person, reading_unit, source_unit, misfit
            As in the constructor.
        reading_range, resolution, ledger
            As in the constructor.
        model : {"graph", "heat", "heat-walls"}
            The field model (see :mod:`dpcloak.sensors.spec`).
        diffusion : float
            τ (graph) or T (heat) in m² (field only): heat spreads over about ``√(2·diffusion)`` metres.
            :func:`~dpcloak.sensors.choose_diffusion_time` picks it from public historical data.
        diffusion_range : (float, float), optional
            ``(lo, hi)`` m² around ``diffusion``: the guarantee then holds for any diffusion in the range
            (Δ2 is the largest over it, certified: :func:`~dpcloak.sensors.spec.range_sensitivity`); the
            map is recovered with ``diffusion``.
        sources : {"sensors", "grid"}; graph : {"knn", "delaunay"}; k, spacing, margin, room
            See :class:`~dpcloak.sensors.spec.ModelSpec` (``room=((x0, x1), (y0, y1))``: a floor plan).
        lonlat, names, centre, colocated, merge_within
            For coordinates given as an array (see :func:`~dpcloak.sensors.layout_from_coordinates`).
        """
        if isinstance(sensors, SensorLayout):
            layout = sensors
        else:
            layout = layout_from_coordinates(sensors, names=names, lonlat=lonlat, centre=centre, colocated=colocated,
                                             merge_within=merge_within)
        common: dict[str, Any] = {
            "relation": relation, "epsilon": epsilon, "delta": delta, "budget": budget, "measurement": measurement,
            "max_count_per_person": max_count_per_person, "reading_unit": reading_unit, "source_unit": source_unit,
            "misfit": misfit, "reading_range": reading_range, "resolution": resolution, "layout": layout,
            "ledger": ledger}
        if measurement == "counts":
            given = {"diffusion": diffusion, "diffusion_range": diffusion_range,
                     "model": model if model != "graph" else None,
                     "sources": sources if sources != "sensors" else None, "spacing": spacing, "room": room,
                     "misfit": misfit, "source_unit": source_unit}
            extra = [name for name, value in given.items() if value is not None]
            if extra:
                raise InvalidParameterError(f"{', '.join(extra)} describe a field model; a counts network has none "
                                            "(its map is the private count of each site)",
                                            parameter=extra[0], got=extra)
            return cls(counts_model(layout.positions), **common)
        if diffusion is None:
            raise InvalidParameterError("diffusion (m²) is required for measurement='field': heat spreads about "
                                        "sqrt(2 x diffusion) metres (choose_diffusion_time picks it from public "
                                        "history)", parameter="diffusion")
        spec = ModelSpec(kind=model, diffusion=diffusion, graph=graph, k=k, sources=sources, spacing=spacing,
                         margin=margin, room=room, diffusion_range=diffusion_range)
        return cls(build_model(layout.positions, spec), spec=spec, **common)

    # --- description --------------------------------------------------------------------------
    @property
    def n_sensors(self) -> int:
        """Number of sensors (rows of the model)."""
        return self.model.shape[0]

    @property
    def n_sources(self) -> int:
        """Number of source locations (columns of the model)."""
        return self.model.shape[1]

    @property
    def sensor_positions(self) -> NDArray[np.float64] | None:
        """``(m, 2)`` metres (x east, y north), or the model's sensor positions."""
        if self.layout is not None:
            return np.array(self.layout.positions)
        pos = self.model.sensor_positions
        return None if pos is None else np.asarray(pos, dtype=float)

    @property
    def source_positions(self) -> NDArray[np.float64] | None:
        """``(n, 2)`` metres of the source locations (``None`` where the domain has no coordinates)."""
        return self.model.domain.coordinates()

    @property
    def sigma(self) -> float:
        """Noise scale per reading, in :attr:`reading_unit`: the discrete Gaussian's σ, or the discrete Laplace
        noise's standard deviation (counts)."""
        if isinstance(self.mechanism, DiscreteLaplaceMechanism):
            return noise_std(self.mechanism)
        return float(self.mechanism.sigma)

    @property
    def noise(self) -> str:
        """The per-sensor noise in words, with its unit."""
        if isinstance(self.mechanism, DiscreteLaplaceMechanism):
            return f"exact discrete Laplace noise (scale {self.mechanism.scale_value:.4g} {self.reading_unit})"
        return f"exact discrete Gaussian noise (σ = {self.sigma:.4g} {self.reading_unit})"

    @property
    def privacy_unit(self) -> str:
        """What one release hides, in words: the relation (field) or one person's contribution (counts)."""
        if self.relation is not None:
            words = self.relation.describe()  # the seeds' unit: one person (a unit source) moved or added
            if self.source_unit != "people":
                words = words.replace("one person", f"one unit of source ({self.source_unit})", 1)
            return words
        c = self.max_count_per_person
        return f"one person's contribution (counted at most {'once' if c == 1 else f'{c} times'} per window)"

    @property
    def model_condition(self) -> str | None:
        """``None`` for counts (unconditional); for a field network, the condition its guarantee needs, in words."""
        if self.measurement == "counts":
            return None
        return f"holds if the readings follow the model ({self.spec.describe() if self.spec else 'as given'})"

    def guarantee_text(self) -> str:
        """The guarantee of one window in words: unconditional (counts) or conditional on the model (field).

        Examples
        --------
        >>> from dpcloak.sensors import Relation
        >>> sites = [[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]]
        >>> counts = SensorNetwork.from_coordinates(sensors=sites, measurement="counts", epsilon=1.0, delta=1e-6,
        ...                                         budget=(10.0, 1e-5))
        >>> "unconditional" in counts.guarantee_text()
        True
        >>> field = SensorNetwork.from_coordinates(sensors=sites, relation=Relation.move(150.0), epsilon=1.0,
        ...                                        delta=1e-6, budget=(10.0, 1e-5), diffusion=2000.0, misfit=0.25)
        >>> "holds if the readings follow the model" in field.guarantee_text(), "25 %" in field.guarantee_text()
        (True, True)
        """
        if self.measurement == "counts":
            assert self.max_count_per_person is not None
            return count_guarantee_text(epsilon=self.epsilon, delta=self.delta,
                                        max_count_per_person=self.max_count_per_person,
                                        mechanism=self.mechanism, reading_unit=self.reading_unit)
        model = self.spec.describe() if self.spec is not None else "as given"
        return field_guarantee_text(epsilon=self.epsilon, delta=self.delta, privacy_unit=self.privacy_unit,
                                    model=model, misfit=self.misfit)

    @property
    def epsilon(self) -> float:
        """ε of one release."""
        return float(self.mechanism.epsilon)

    @property
    def delta(self) -> float:
        """δ of one release."""
        return float(self.mechanism.delta)

    @property
    def resolution(self) -> float:
        """Grid of the released values, in :attr:`reading_unit` (1 for counts)."""
        return float(self.mechanism.resolution)

    # --- accounting ---------------------------------------------------------------------------
    def guarantee(self, releases: int) -> PrivacySpent:
        """Composed (ε, δ_budget) after ``releases`` releases: ``k·ρ``-zCDP in closed form.

        :func:`dpcloak.privacy.accounting.privacy_spent` with ``accountant="closed"`` (Bun & Steinke
        2016 Lemma 2.3; converted by Canonne, Kamath & Steinke 2020 Prop. 12 at the optimal order): the
        one accountant (:func:`~dpcloak.privacy.compose`) on the mechanism's release events. Stated at
        the budget's δ, so ``guarantee(1)`` is the per-release ε at that δ (0.884 at 10⁻⁵ for a release
        calibrated to (1, 10⁻⁶)); at the mechanism's own δ the accountant gives the mechanism's ε.
        """
        return self.release_spec.guarantee(releases)

    @property
    def releases(self) -> int:
        """Vector releases charged so far (from the ledger when there is one; class docstring)."""
        return self._accountant.readings

    def spent(self) -> PrivacySpent:
        """The composed guarantee of the releases so far."""
        return self.guarantee(self.releases)

    def report(self, *, window: int = 1, releases: int | None = None) -> PrivacyReport:
        """Pattern-level and event-level spending in one call (:func:`~dpcloak.privacy.accounting.privacy_report`).

        ``releases`` defaults to the releases so far; ``window`` is how many consecutive releases one
        event stays visible in (e.g. 3 hours of a party).
        """
        k = self.releases if releases is None else releases
        return privacy_report(self.mechanism, releases=k, window=window, delta=self.budget[1], accountant=ACCOUNTANT)

    def max_releases(self) -> int:
        """The largest number of releases the budget allows (≥ 1, checked at construction)."""
        return self.release_spec.max_releases()

    def _charge(self, releases: int) -> None:
        """Charge ``releases`` vector releases before anything is sampled (write-ahead with a ledger)."""
        self._accountant.charge(releases)

    # --- release ------------------------------------------------------------------------------
    def privatize(self, readings: ArrayLike, *, rng: RngLike = None, simulation: bool = False) -> NDArray[np.float64]:
        """Private readings of one period ``(m,)`` or of ``k`` periods ``(k, m)``; NaN marks a missing reading.

        Parameters
        ----------
        readings : array_like, shape (m,) or (k, m)
            Raw readings in people; NaN = the sensor sent nothing (it stays NaN and is not charged).
        rng : Generator or int, optional
            Only with ``simulation=True``: a seeded, *not secure* integer source for experiments.
            The default draws from the OS CSPRNG (:func:`secrets.randbelow`).
        simulation : bool, default False
            Opt-in for a seeded ``rng``.

        Returns
        -------
        ndarray
            Same shape: each present reading clipped to ``reading_range``, rounded to the grid and
            plus exact discrete Gaussian noise.

        Raises
        ------
        BudgetExceededError
            If the periods' vector releases would exceed the budget; nothing is released then.

        Privacy guarantee
        -----------------
        Each period's vector (or the sub-vector of its present sensors) is (ε, δ)-DP under
        :attr:`relation` (class docstring); every period with at least one reading is charged as one
        vector release at the full Δ2, before sampling.
        """
        if rng is not None and not simulation:
            raise InvalidParameterError(
                "rng fixes the noise, which is not secure for a release; leave rng=None (OS CSPRNG), or pass "
                "simulation=True for experiments", parameter="rng"
            )
        try:
            y = np.array(readings, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise InvalidParameterError("readings must be numbers (NaN for a missing reading)",
                                        parameter="readings") from None
        check_exact_doubles(readings, y, name="readings")
        if y.ndim not in (1, 2) or y.shape[-1] != self.n_sensors:
            raise InvalidParameterError(f"readings must have shape ({self.n_sensors},) or (k, {self.n_sensors}), "
                                        f"got {y.shape}", parameter="readings")
        if np.any(np.isinf(y)):
            raise InvalidParameterError("readings must be finite numbers or NaN (missing); got an infinite value",
                                        parameter="readings")
        rows = np.atleast_2d(y)
        present = ~np.isnan(rows)
        spec = self.release_spec
        spec.check_counts(rows[present])
        cells = [self.mechanism.to_grid(spec.clip(row[mask])) if mask.any() else np.zeros(0, dtype=np.int64)
                 for row, mask in zip(rows, present, strict=True)]
        self._charge(int(present.any(axis=1).sum()))
        out = np.full(rows.shape, np.nan)
        for r, (mask, idx) in enumerate(zip(present, cells, strict=True)):
            if idx.size:
                out[r, mask] = self.mechanism.privatize_grid(idx.tolist(), rng=rng)
        return out.reshape(y.shape)

    def privatize_reading(self, sensor: int, value: float, *, window: int | None = None,
                          randbelow: RandBelow | None = None) -> float:
        """What sensor ``sensor`` sends for one raw reading: clipped, rounded to the grid, exact discrete Gaussian.

        ``randbelow`` is the integer source (default :func:`secrets.randbelow`, the OS CSPRNG); a
        reproducible one is for tests only. The budget is checked first
        (:class:`~dpcloak.errors.BudgetExceededError` and nothing sent past it).

        What is charged: without ``window``, each reading is one vector release. With ``window``,
        consecutive readings of *distinct* sensors for the same window (readings of that window's
        state) fill one vector release, charged once at the full Δ2 when it is opened; a reading of
        another window, or a second reading of a sensor already in it, opens (and charges) a new one.

        Privacy guarantee
        -----------------
        One coordinate of an (ε, δ)-DP vector release (class docstring); the releases charged are
        a partition of the readings into vectors with at most one reading per sensor, so their
        composition bounds what was released.
        """
        j = check_int("sensor", sensor, minimum=0, maximum=self.n_sensors - 1)
        w = None if window is None else check_int("window", window, minimum=0)
        cell = self.release_spec.grid_cell(value)
        if w is not None and self._open is not None and self._open[0] == w and j not in self._open[1]:
            self._open[1].add(j)
        else:
            self._charge(1)
            self._open = None if w is None else (w, {j})
        return self.release_spec.add_noise(cell, randbelow)

    # --- recovery -----------------------------------------------------------------------------
    def dense_model(self) -> NDArray[np.float64]:
        """The model as a dense ``(m, n)`` array (cached)."""
        if self._dense is None:
            self._dense = self.model.todense()
            self._dense.setflags(write=False)
        return self._dense

    def range_models(self) -> tuple[NDArray[np.float64], ...]:
        """The model at both ends of the declared ``diffusion_range``, dense ``(m, n)`` (cached); ``()`` without one.

        The recovery's bootstrap draws readings from them in turn, so the uncertainty includes the
        models the guarantee is stated for (:func:`~dpcloak.sensors.result.recover_sources`).

        Examples
        --------
        >>> from dpcloak.sensors import Relation
        >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]],
        ...                                      relation=Relation.move(150.0), epsilon=1.0, delta=1e-6,
        ...                                      budget=(10.0, 1e-5), diffusion=2000.0,
        ...                                      diffusion_range=(1000.0, 4000.0))
        >>> [m.shape for m in net.range_models()]
        [(3, 3), (3, 3)]
        """
        if self._range_dense is None:
            spec, layout = self.spec, self.layout
            if spec is None or spec.diffusion_range is None or layout is None:
                self._range_dense = ()
            else:
                self._range_dense = tuple(
                    build_model(layout.positions, replace(spec, diffusion=d, diffusion_range=None)).todense()
                    for d in spec.diffusion_range)
        return self._range_dense

    def rows_model(self, present: NDArray[np.bool_]) -> LinearModel:
        """The model on the rows of the ``present`` sensors (the model itself when all are; the last subset asked for
        is kept).

        Consecutive windows in which the same sensors reported get the same object, so the solver's
        compression of it is found by object, not re-hashed from its content (about 1 ms a window at
        1,000 × 130).

        Examples
        --------
        >>> import numpy as np
        >>> from dpcloak.sensors import Relation, SensorNetwork
        >>> net = SensorNetwork.from_coordinates(sensors=[[0.0, 0.0], [100.0, 0.0], [0.0, 100.0]],
        ...                                      relation=Relation.move(150.0), epsilon=1.0, delta=1e-6,
        ...                                      budget=(10.0, 1e-5), diffusion=2000.0)
        >>> rows = net.rows_model(np.array([True, False, True]))
        >>> rows.shape[0], rows is net.rows_model(np.array([True, False, True]))
        (2, True)
        >>> net.rows_model(np.array([True, True, True])) is net.model
        True
        >>> net.rows_model(np.array([1, 0, 1]))
        Traceback (most recent call last):
            ...
        dpcloak.errors.InvalidParameterError: present must be a boolean array of shape (3,) ...
        """
        mask = np.asarray(present)
        if mask.dtype != bool or mask.shape != (self.n_sensors,) or not mask.any():
            raise InvalidParameterError(f"present must be a boolean array of shape ({self.n_sensors},) with at "
                                        f"least one True, got {mask.dtype} of shape {mask.shape}", parameter="present")
        if mask.all():  # every sensor: the model itself (matrix-free when it is, e.g. the separable 2-D floor)
            return self.model
        key = np.packbits(mask).tobytes()
        if self._rows is None or self._rows[0] != key:
            self._rows = (key, DenseModel(self.dense_model()[mask], domain=self.model.domain))
        return self._rows[1]

    def recover(
        self,
        private_readings: ArrayLike,
        *,
        present: ArrayLike | None = None,
        warm_start: NetworkRecovery | None = None,
        uncertainty_draws: int = 10,
        rng: RngLike = None,
        noise_std: float | None = None,
    ) -> NetworkRecovery:
        """Where were the people? BPDN on the present sensors' private readings (see :func:`recover_sources`);
        for a counts network, the private counts projected onto ≥ 0 (:func:`recover_counts`, whose ``noise_std``
        replaces the per-reading noise: counts networks only)."""
        if self.measurement == "counts":
            return recover_counts(self, private_readings, present=present, uncertainty_draws=uncertainty_draws,
                                  rng=rng, noise_std=noise_std)
        if noise_std is not None:
            raise InvalidParameterError("noise_std is for counts networks only (a field network's recovery is "
                                        "calibrated to its own per-reading noise)", parameter="noise_std",
                                        got=noise_std)
        return recover_sources(self, private_readings, present=present, warm_start=warm_start,
                               uncertainty_draws=uncertainty_draws, rng=rng)

    # --- configuration ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain data (:func:`dpcloak.sensors.config.network_to_dict`)."""
        from dpcloak.sensors.config import network_to_dict

        return network_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, ledger: str | PathLike[str] | None = None) -> SensorNetwork:
        """Rebuild a network from :meth:`to_dict` (refuses a stated Δ2 or σ that does not match)."""
        from dpcloak.sensors.config import network_from_dict

        return network_from_dict(data, ledger=ledger)

    def save(self, path: str | Path) -> Path:
        """Write the configuration as TOML (``.toml``) or JSON (``.json``); returns the path."""
        from dpcloak.sensors.config import save_network

        return save_network(self, path)

    @classmethod
    def load(cls, path: str | Path, *, ledger: str | PathLike[str] | None = None) -> SensorNetwork:
        """Read a configuration written by :meth:`save` (``ledger``: as in the constructor)."""
        from dpcloak.sensors.config import load_network

        return load_network(path, ledger=ledger)

    def fingerprint(self) -> str:
        """Hex SHA-256 of the canonical JSON of the privacy-determining configuration."""
        from dpcloak.sensors.config import fingerprint

        return fingerprint(self)

    def __repr__(self) -> str:
        return (f"SensorNetwork(measurement={self.measurement!r}, n_sensors={self.n_sensors}, n_sources="
                f"{self.n_sources}, unit={self.privacy_unit!r}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"delta2={self.delta2:.6g}, sigma={self.sigma:.6g}, budget={self.budget})")


