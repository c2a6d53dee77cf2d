"""Black-box harness and the random-pair conversion.

Oracles: mechanisms whose exact output distributions are known (randomized response, Gaussian
shift) — private ones must be accepted and violating ones rejected, with the error rate checked over
seeded repetitions where it is cheap; the pilot projection is compared with the true direction.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpcloak.audit import audit_blackbox, audit_random_pairs, random_pair_plan
from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.mechanisms import GaussianMechanism


def randomized_response(eps):
    """One bit: report the database's bit with probability e^ε/(1+e^ε) (exactly ε-DP, non-vectorized)."""
    keep = math.exp(eps) / (1 + math.exp(eps))

    def mechanism(bit, rng):
        return bit if rng.random() < keep else 1 - bit

    return mechanism


def rr_side(eps):
    keep = math.exp(eps) / (1 + math.exp(eps))
    return lambda bit, binning: np.array([keep, 1 - keep]) if bit == 0 else np.array([1 - keep, keep])


def test_scalar_python_mechanism_error_rate():
    accepts = [audit_blackbox(randomized_response(1.0), (0, 1), epsilon=1.0, alpha=0.1, rng=s).accepted
               for s in range(10)]
    rejects = [not audit_blackbox(randomized_response(2.0), (0, 1), epsilon=1.0, alpha=0.1, rng=s).accepted
               for s in range(10)]
    bound = int(stats.binom.isf(1e-3, 10, 1 / 3))
    assert accepts.count(False) <= bound and rejects.count(False) <= bound


def test_binning_of_discrete_outputs_and_notes():
    res = audit_blackbox(randomized_response(1.0), (0, 1), epsilon=1.0, alpha=0.1, rng=0)
    pair = res.pairs[0]
    assert pair.binning.n_bins == 2 and pair.binning.direction is None
    assert "Theorem 10.5" in res.notes  # δ = 0 without side information: only δ_ε is tested
    assert res.queries == pair.pilot_queries + sum(pair.test.queries) + 2 * pair.event_queries


def test_side_information_selects_the_full_information_testers():
    pure = audit_blackbox(randomized_response(1.0), (0, 1), epsilon=1.0, alpha=0.1, bins=[0.5],
                          side_information=rr_side(1.0), rng=0)
    assert pure.accepted and pure.pairs[0].test.algorithm.startswith("Algorithm 6")
    approx = audit_blackbox(randomized_response(1.0), (0, 1), epsilon=1.0, delta=0.01, alpha=0.1, bins=[0.5],
                            side_information=rr_side(1.0), rng=0)
    assert approx.accepted and approx.pairs[0].test.algorithm.startswith("Algorithm 5")
    lying = audit_blackbox(randomized_response(2.0), (0, 1), epsilon=1.0, alpha=0.1, bins=[0.5],
                           side_information=rr_side(1.0), rng=0)
    assert not lying.accepted


def gaussian_vector(mech, means):
    def mechanism(k, rng, size):
        return mech.privatize(np.tile(means[k], (size, 1)), rng=rng)
    return mechanism


def test_vector_outputs_are_projected_on_the_pilot_mean_difference():
    means = {0: np.zeros(3), 1: np.array([0.6, 0.0, 0.8])}  # ‖difference‖ = 1 = Δ2
    good = GaussianMechanism(epsilon=0.5, delta=0.05, sensitivity=1.0)
    res = audit_blackbox(gaussian_vector(good, means), (0, 1), epsilon=0.5, delta=0.05, alpha=0.05, pilot=20000,
                         vectorized=True, rng=1, claim_scope="idealised")
    assert res.accepted
    direction = res.pairs[0].binning.direction
    assert direction @ means[1] > 0.98  # cosine with the true direction
    bad = GaussianMechanism(epsilon=0.5, delta=0.05, sensitivity=0.25)
    bad_audit = audit_blackbox(gaussian_vector(bad, means), (0, 1), epsilon=0.5, delta=0.05, alpha=0.05, pilot=20000,
                               vectorized=True, rng=1, claim_scope="idealised")
    assert not bad_audit.pairs[0].test.accepted


def test_several_pairs_split_the_failure_probability_and_reject_on_the_bad_one():
    def mechanism(db, rng, size):  # private between 0 and 1, not between 0 and 5
        return db + 2.0 * rng.standard_normal(size)

    # float noise: the claim is for idealised real-valued noise (the released doubles' low bits are not private)
    res = audit_blackbox(mechanism, [(0.0, 1.0), (0.0, 5.0)], epsilon=0.5, delta=0.05, alpha=0.05,
                         vectorized=True, rng=0, claim_scope="idealised")
    assert not res.accepted
    assert [p.accepted for p in res.pairs] == [True, False] and not res.pairs[1].test.accepted
    assert res.worst is res.pairs[1]
    # each pair gets 1/6; its tester 2/3 of that, its eight event tests (four families, two orders) 1/3 of that
    assert all(p.test.failure_probability == pytest.approx(1 / 9) for p in res.pairs)
    assert all(e.failure_probability == pytest.approx(1 / 144) for p in res.pairs for e in p.events)
    generated = audit_blackbox(mechanism, ((0.0, float(d)) for d in (1, 1)), epsilon=0.5, delta=0.05, alpha=0.05,
                               vectorized=True, rng=0, claim_scope="idealised")
    assert generated.accepted and len(generated.pairs) == 2


def test_random_pairs_accept_and_reject():
    def mechanism(db, rng, size):  # database (b, eps): randomized response on bit b at level eps
        bit, eps = db
        keep = math.exp(eps) / (1 + math.exp(eps))
        flip = rng.random(size) >= keep
        return np.where(flip, 1 - bit, bit)

    def pairs(bad_fraction):
        def draw(rng):
            eps = 3.0 if rng.random() < bad_fraction else 0.5
            return (0, eps), (1, eps)
        return draw

    plan = random_pair_plan(gamma=0.1, alpha=0.2)
    n_pairs, repeats = plan.n_pairs, plan.repeats
    assert n_pairs == math.ceil(math.log(3) * (2 * 0.2**2 + 0.4) / 0.04)
    assert stats.binom.sf(repeats // 2, repeats, 1 / 3) <= 0.1 < stats.binom.sf((repeats - 2) // 2, repeats - 2, 1 / 3)
    kw = {"epsilon": 1.0, "delta": 0.0, "gamma": 0.1, "alpha": 0.2, "vectorized": True, "pilot": 200,
          "event_queries": 2000}
    ok = audit_random_pairs(mechanism, pairs(0.0), rng=0, **kw)
    assert ok.verdict == "ACCEPT" and ok.fraction_rejected <= ok.threshold and ok.n_pairs == n_pairs
    bad = audit_random_pairs(mechanism, pairs(0.8), rng=0, **kw)
    assert bad.verdict == "REJECT" and bad.fraction_rejected > bad.threshold


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": -0.5}, "epsilon"),
        ({"delta": 2.0}, "delta"),
        ({"neighbours": [0, 1, 2]}, "neighbours"),
        ({"neighbours": []}, "neighbours"),
        ({"mechanism": 3}, "callable"),
        ({"bins": [1.0, 0.0]}, "increasing"),
        ({"pilot": 1}, "pilot"),
        ({"alpha": 0.1, "budget": 100.0}, "exactly one"),
    ],
)
def test_bad_inputs(kwargs, match):
    args = {"mechanism": randomized_response(1.0), "neighbours": (0, 1), "epsilon": 1.0, "rng": 0, **kwargs}
    mech, nb = args.pop("mechanism"), args.pop("neighbours")
    with pytest.raises(InvalidParameterError, match=match):
        audit_blackbox(mech, nb, **args)


def test_misbehaving_mechanisms():
    with pytest.raises(InvalidParameterError, match="returned an array of shape"):
        audit_blackbox(lambda d, rng, size: np.zeros(size + 1), (0, 1), epsilon=1.0, vectorized=True, rng=0)
    with pytest.raises(InvalidParameterError, match="finite"):
        audit_blackbox(lambda d, rng: math.nan, (0, 1), epsilon=1.0, pilot=2, rng=0)
    with pytest.raises(InvalidParameterError, match="numbers"):
        audit_blackbox(lambda d, rng: "x", (0, 1), epsilon=1.0, pilot=2, rng=0)
