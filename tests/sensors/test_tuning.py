"""choose_diffusion_time: recovers the diffusion that generated synthetic history; refusals."""

import numpy as np
import pytest

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
    history[3, 5] = np.nan  # an incomplete period is skipped
    cands = [truth / 10, truth / 3, truth, truth * 3, truth * 10]
    choice = choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind=kind, diffusion=d)), history,
                                   candidates=cands)
    assert choice.diffusion == truth and choice.periods == 19
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
        (np.full((3, 12), np.nan), [1.0], "no period where every sensor reported"),
        (np.zeros((3, 12)), [1.0], "all zero"),
        (-np.ones((3, 12)), [1.0], "non-negative"),
        (np.ones((3, 11)), [1.0], "has 12 sensors but history has 11"),
    ],
)
def test_refusals(history, cands, match):
    with pytest.raises(InvalidParameterError, match=match):
        choose_diffusion_time(lambda d: build_model(POS, ModelSpec(kind="graph", diffusion=d)), history,
                              candidates=cands)
