"""Radius policies: exact χ² quantile (scipy oracle), Lemma 6 bound ≥ it, σ√m; seeded coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from dpcloak.errors import InvalidParameterError
from dpcloak.recovery.radius import choose_radius


def test_policies():
    m, s = 50, 0.3
    assert choose_radius(m=m, sigma=s, policy="paper").radius == pytest.approx(s * math.sqrt(m))
    c = choose_radius(m=m, sigma=s, failure_probability=0.05)
    assert c.policy == "chi2" and c.radius == pytest.approx(s * math.sqrt(chi2.ppf(0.95, m)))
    lem = choose_radius(m=m, sigma=s, policy="lemma6", failure_probability=0.05)
    assert lem.radius >= c.radius  # Lemma 6 is a valid, hence conservative, tail bound
    assert choose_radius(m=m, radius=2.0).policy == "explicit"


def test_chi2_coverage_is_as_promised():
    """Seeded: P(‖ν‖ > r) = β; 4000 draws, tolerance 4 binomial standard deviations."""
    rng = np.random.default_rng(0)
    m, beta, trials = 50, 0.1, 4000
    r = choose_radius(m=m, sigma=1.0, failure_probability=beta).radius
    miss = np.mean(np.linalg.norm(rng.standard_normal((trials, m)), axis=1) > r)
    assert abs(miss - beta) <= 4 * math.sqrt(beta * (1 - beta) / trials)
    paper = choose_radius(m=m, sigma=1.0, policy="paper").radius
    assert np.mean(np.linalg.norm(rng.standard_normal((trials, m)), axis=1) > paper) > 0.4  # σ√m: about half


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"sigma": 0.0}, "sigma"), ({"sigma": float("nan")}, "sigma"), ({}, "exactly one"),
     ({"sigma": 1.0, "radius": 1.0}, "exactly one"), ({"sigma": 1.0, "failure_probability": 0.0}, "failure"),
     ({"sigma": 1.0, "policy": "x"}, "radius_policy")],
)
def test_bad(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        choose_radius(m=10, **kwargs)
