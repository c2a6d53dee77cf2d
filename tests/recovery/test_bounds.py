"""Paper bounds (seed 000 Theorem 8, Corollary 9, Theorem 10; seed 002 Theorem 8.6).

Oracle: the published expressions re-evaluated here term by term, and the assumption list.
"""

from __future__ import annotations

import math

import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.recovery.bounds import corollary9_bound, theorem8_bound, theorem10_lower_bound, theorem86_bound


def _thm8(m, T, sigma, k, A):
    B = 2 * sigma + k / math.sqrt(2 * math.pi) * math.exp(-A * A / (4 * T))
    c = math.sqrt(T) * B
    val = (math.exp(-1 / (2 * m * m * T)) * T**0.75 * math.sqrt(B) / k
           + (k * math.sqrt(T) + T * T / k) * math.exp(-1 / (4 * m * m * T)) * B) / (1 - c)
    return val, c


def test_theorem8_matches_published_expression():
    b = theorem8_bound(m=50, t=0.1, sigma=0.1, k=1, A=0.2)
    val, c = _thm8(50, 0.05, 0.1, 1, 0.2)
    assert b.applies and b.kind == "upper" and b.value == pytest.approx(val, rel=1e-12)
    assert "not specified" in b.reason and f"{c:.4g}" in b.reason


def test_theorem8_grows_with_sigma():
    vals = [theorem8_bound(m=50, t=0.1, sigma=s, k=1, A=0.2).value for s in (0.01, 0.1, 0.5)]
    assert vals[0] < vals[1] < vals[2]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"m": 2, "t": 0.1}, "assumption 1"),
        ({"m": 50, "t": 1.2}, "assumption 2"),
        ({"m": 50, "t": 0.1, "k": 2, "separation": 0.3}, "assumption 3"),
        ({"m": 50, "t": 0.1, "k": 2}, "separation"),
        ({"m": 50, "t": 0.1, "sigma": 3.0}, "assumption 4"),
    ],
)
def test_theorem8_reports_failed_assumption(kwargs, needle):
    args = {"sigma": 0.1, "k": 1, "A": 0.2, **kwargs}
    b = theorem8_bound(**args)
    assert not b.applies and math.isnan(b.value) and needle in b.reason


def test_corollary9_substitutes_private_noise():
    n, m, t, eps, dlt = 2000, 50, 0.6, 1.0, 0.1
    T = 0.3
    b = corollary9_bound(n=n, m=m, t=t, epsilon=eps, delta=dlt, k=1, A=0.5)
    noise = 2 * math.sqrt(m) * math.log(1 / dlt) / (eps * n * T**1.5)
    val, _ = _thm8(m, T, noise / 2, 1, 0.5)
    assert b.applies and b.value == pytest.approx(val, rel=1e-12)
    paper = corollary9_bound(n=100, m=50, t=0.1, epsilon=1.0, delta=0.1, k=1, A=0.2)
    assert not paper.applies and "o(1)" in paper.reason  # the paper's own defaults violate √m/(nT) < 1


def test_theorem10_constant_and_explicit_form():
    b = theorem10_lower_bound(m=50, t=0.1, sigma=0.1)
    a = min(0.5, 0.05**1.5 * 0.1 / (math.sqrt(2) * math.sqrt(50)))
    assert b.kind == "lower" and b.value == pytest.approx(a / 8) and "corrected" in b.source
    explicit = theorem10_lower_bound(m=50, t=0.1, sigma=0.1, lipschitz=13.6)
    assert explicit.value == pytest.approx(min(0.5, 0.1 / 13.6) / 8)
    assert theorem10_lower_bound(m=50, t=0.1, sigma=1e6).value == pytest.approx(0.5 / 8)


def test_theorem86():
    b = theorem86_bound(m=50, t=0.1, sigma=0.1, k=1, A=0.3)
    T = 0.05
    C = min(1.0, math.sqrt(T) * (0.1 + math.exp(-0.09 / (4 * T))))
    inner = math.sqrt(T**1.5 * C / (math.sqrt(T) + 1)) + C + T * T * C / (T + 1)
    assert b.applies and b.value == pytest.approx(min(1.0, inner / (1 - C)), rel=1e-12)
    trivial = theorem86_bound(m=50, t=0.4, sigma=10.0, k=1, A=0.3)
    assert trivial.value == 1.0 and "trivial" in trivial.reason


def test_bad_parameters():
    with pytest.raises(InvalidParameterError, match="sigma"):
        theorem8_bound(m=50, t=0.1, sigma=-1.0, k=1, A=0.2)
    with pytest.raises(InvalidParameterError, match="delta"):
        corollary9_bound(n=100, m=50, t=0.1, epsilon=1.0, delta=1.5, k=1, A=0.2)
    with pytest.raises(InvalidParameterError, match="k"):
        theorem86_bound(m=50, t=0.1, sigma=0.1, k=0, A=0.2)
