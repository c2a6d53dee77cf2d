"""choose_diffusion_time: recovers the diffusion that generated synthetic history, with gaps; scale; misfit."""

import warnings

import numpy as np
import pytest
from scipy.optimize import nnls

from dpcloak.errors import InvalidParameterError
from dpcloak.sensors import ModelSpec, build_model, choose_diffusion_time

POS = np.random.default_rng(0).uniform(0, 600, (12, 2))


def _history(kind, truth, periods=20):
    """Sparse, heterogeneous crowds (30 % of sites busy, exponential sizes) seen through the true model."""
    rng = np.random.default_rng(1)
    model = build_model(POS, ModelSpec(kind=kind, diffusion=truth))
    return np.array([model.matvec(rng.exponential(50, 12) * (rng.random(12) < 0.3)) for _ in range(periods)])


@pytest.mark.parametrize("kind", ["graph", "heat"])
def test_the_generating_diffusion_wins_on_its_own_history(kind):
    truth = 20_000.0  # spreads about 200 m, sites about 150 m apart: neighbours see each other's crowds
    history = _history(kind, truth)
    history[3, 5] = np.nan  # a missing reading: skipped, its period still used
    cands = [truth / 10, truth / 3, truth, truth * 3, truth * 10]
    choice = choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind=kind, diffusion=d)), history,
                                   candidates=cands)
    assert choice.diffusion == truth and choice.periods == 20
    assert np.all(np.diff(choice.scores[:3]) < 0) and np.all(np.diff(choice.scores[2:]) > 0)  # U-shaped


@pytest.mark.parametrize("kind", ["graph", "heat"])
def test_a_barely_observable_diffusion_is_found_within_a_factor_of_three(kind):
    """At 2 000 m² heat spreads ~60 m, less than half the site spacing: little crosses to the held-out
    sensor, so the score is flat near the truth; the choice still lands on a neighbouring candidate."""
    truth = 2_000.0
    cands = [truth / 10, truth / 3, truth, truth * 3, truth * 10]
    choice = choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind=kind, diffusion=d)),
                                   _history(kind, truth), candidates=cands)
    assert truth / 3 <= choice.diffusion <= truth * 3
    assert choice.scores[0] > choice.scores.min() and choice.scores[-1] > choice.scores.min()


@pytest.mark.parametrize(
    ("history", "cands", "match"),
    [
        (np.ones((3, 12)), [], "at least one value"),
        (np.ones((3, 12)), [-1.0], r"candidates must lie in \(0, inf\)"),
        (np.ones(12), [1.0], r"shape \(k, m\)"),
        (np.full((3, 12), np.nan), [1.0], "no period where at least 2 sensors reported"),
        (np.ones((3, 12)), [1e7], r"every candidate spreads beyond the network's extent"),
        (np.zeros((3, 12)), [1.0], "all zero"),
        (-np.ones((3, 12)), [1.0], "non-negative"),
        (np.ones((3, 11)), [1.0], "has 12 sensors but history has 11"),
    ],
)
def test_refusals(history, cands, match):
    with pytest.raises(InvalidParameterError, match=match):
        choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind="graph", diffusion=d)), history,
                              candidates=cands)


def _oracle_errors(M, history):
    """Leave-one-sensor-out errors per period, written out index by index over the readings present (the
    least-squares fits are not unique where fewer sensors than sources remain, so the same solver is used)."""
    owner = M.argmax(axis=0)
    err, energy = [], []
    for y in history:
        present = [j for j in range(len(y)) if np.isfinite(y[j])]
        total = 0.0
        for j in present:
            others = [i for i in present if i != j]
            seen = [s for s in range(M.shape[1]) if owner[s] != j]
            f, _ = nnls(M[np.ix_(others, seen)], y[others])
            total += (M[j, seen] @ f - y[j]) ** 2
        err.append(total)
        energy.append(sum(y[j] ** 2 for j in present))
    return np.array(err), np.array(energy)


def test_every_period_with_a_gap_is_used_and_scored_like_an_independent_implementation():
    """Like real open data (no complete day of PM10 in twelve years): every period misses a reading."""
    truth = 20_000.0
    history = _history("graph", truth, periods=12)
    rng = np.random.default_rng(5)
    history[np.arange(12), rng.integers(0, 12, 12)] = np.nan
    history[0, :10] = np.nan  # 2 readings left: still a period
    cands = [truth / 3, truth, truth * 3]
    build = lambda d: build_model(POS, ModelSpec(kind="graph", diffusion=d))  # noqa: E731
    choice = choose_diffusion_time(build, history, candidates=cands)
    assert choice.periods == 12 and choice.diffusion == truth
    for c, score in zip(cands, choice.scores, strict=True):
        err, energy = _oracle_errors(build(c).todense(), history)
        assert score == pytest.approx(err.sum() / energy.sum(), rel=1e-6)
    err, energy = _oracle_errors(build(truth).todense(), history)
    np.testing.assert_allclose(choice.window_misfit, err / energy, rtol=1e-6, atol=1e-12)
    assert choice.misfit == choice.scores.min() and choice.fits


def test_candidates_wider_than_the_network_are_dropped_with_a_warning():
    extent = max(np.linalg.norm(a - b) for a in POS for b in POS)
    wide = (2 * extent) ** 2 / 2  # spreads twice the network
    with pytest.warns(UserWarning, match=r"wider than the network's extent .* dropped"):
        choice = choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind="graph", diffusion=d)),
                                       _history("graph", 20_000.0), candidates=[20_000.0, wide])
    assert choice.candidates.tolist() == [20_000.0] and choice.too_wide.tolist() == [wide]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # within the extent: no warning
        choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind="graph", diffusion=d)),
                              _history("graph", 20_000.0), candidates=[20_000.0, extent**2 / 2])


def test_a_model_that_does_not_describe_the_readings_is_reported_as_misfitting():
    """Independent counts per site (no diffusion between them) leave most of the readings unexplained."""
    rng = np.random.default_rng(2)
    history = rng.poisson(200, (20, 12)).astype(float) * rng.uniform(0.2, 3.0, 12)
    choice = choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind="graph", diffusion=d)), history,
                                   candidates=[2_000.0, 20_000.0, 60_000.0])
    assert not choice.fits and choice.misfit > choice.threshold
    assert "use measurement='counts'" in choice.summary()
    good = choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind="graph", diffusion=d)),
                                 _history("graph", 20_000.0), candidates=[20_000.0])
    assert good.fits and "use measurement" not in good.summary()
