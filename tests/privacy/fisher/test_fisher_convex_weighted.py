"""Problem 2 as a convex program (CVXPY) and Corollary 4's weighted policy (Farokhi & Sandberg, Figure 1).

Oracles: the cos² density of Corollary 1 (the convex program must approach it), the closed-form
tilted integral for c(x), and Problem 2's cost evaluated from its definition by quadrature and
finite differences (the cos² policy's cost has the closed form 4π²/L² ∫p).
"""

import math

import numpy as np
import pytest
from scipy import integrate

from dpcloak.errors import InvalidParameterError
from dpcloak.privacy.fisher import (
    BoundedOptimalNoise,
    WeightedOptimalNoise,
    solve_discretised_problem2,
    tilted_cos2_integral,
    weighted_cost,
)

pytest.importorskip("cvxpy")


def test_convex_program_optimum_approaches_cos2_as_grid_refines():
    results = [solve_discretised_problem2(low=-1.0, high=1.0, n_points=n) for n in (20, 40, 80)]
    errors = [r.relative_l2_error for r in results]
    values = [r.fisher_information for r in results]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.04
    assert errors[1] / errors[2] == pytest.approx(2.0, rel=0.2)  # first-order convergence
    target = 4 * math.pi**2 / 4.0
    assert values[0] < values[1] < values[2] < target
    assert abs(values[2] - target) / target < 0.06
    fine = results[2]
    assert fine.density.sum() * (fine.grid[1] - fine.grid[0]) == pytest.approx(1.0, rel=1e-6)


def test_convex_program_optimum_beats_other_densities_on_its_grid():
    res = solve_discretised_problem2(low=0.0, high=1.0, n_points=40)
    h = res.grid[1] - res.grid[0]

    def discrete_fisher(g):
        g = g / (g.sum() * h)
        p = np.concatenate([[0.0], g, [0.0]])
        return float(2 / h * np.sum(np.diff(p) ** 2 / (p[1:] + p[:-1])))

    assert discrete_fisher(res.density) == pytest.approx(res.fisher_information, rel=1e-5)
    assert discrete_fisher(res.cos2_density) >= res.fisher_information - 1e-6
    tent = 1 - np.abs(2 * res.grid - 1)
    assert discrete_fisher(tent) > res.fisher_information


def test_convex_program_bad_inputs():
    with pytest.raises(InvalidParameterError):
        solve_discretised_problem2(low=1.0, high=0.0)
    with pytest.raises(InvalidParameterError):
        solve_discretised_problem2(low=0.0, high=1.0, n_points=2)


@pytest.mark.parametrize("x", [-0.7, 0.0, 0.4, 1.3])
def test_corollary4_normaliser_matches_closed_form(x):
    noise = WeightedOptimalNoise(low=0.0, high=1.0, weight=lambda t: math.exp(-t * t))
    r = -2 * x  # p'/p for p = exp(-x^2)
    assert noise.log_weight_slope(x) == pytest.approx(r, rel=1e-6, abs=1e-8)
    closed = math.exp(-r * (x + 0.5)) * tilted_cos2_integral(tilt=r, low=0.0, high=1.0)
    assert noise.normaliser(x) == pytest.approx(1 / closed, rel=1e-6)
    w = np.linspace(0.0, 1.0, 2001)
    assert integrate.trapezoid(noise.density(w, x), w) == pytest.approx(1.0, rel=1e-5)


def test_tilted_integral_against_quadrature():
    for k in (-3.0, -1e-10, 0.0, 0.5, 4.0):
        q, _ = integrate.quad(lambda w, k=k: math.exp(-k * (w - 1.0)) * math.cos(math.pi * (w - 1.0) / 2) ** 2, 0, 2)
        assert tilted_cos2_integral(tilt=k, low=0.0, high=2.0) == pytest.approx(q, rel=1e-9)


def test_figure1_shapes_exp_weight_independent_of_x_gaussian_weight_not():
    w = np.linspace(0.0, 1.0, 51)
    xs = np.linspace(-1.0, 1.0, 9)
    expo = WeightedOptimalNoise(low=0.0, high=1.0, weight=lambda t: math.exp(-t),
                                weight_derivative=lambda t: -math.exp(-t))
    grid = expo.density_grid(w, xs)
    np.testing.assert_allclose(grid, np.broadcast_to(grid[0], grid.shape), rtol=1e-9, atol=1e-12)
    # printed tilt: exp(-(p'/p)(w + x)) = exp(w + x), so the mass leans towards the top of the support
    assert np.average(w, weights=grid[0]) > 0.5
    gauss = WeightedOptimalNoise(low=0.0, high=1.0, weight=lambda t: math.exp(-t * t)).density_grid(w, xs)
    assert np.max(np.abs(gauss[0] - gauss[-1])) > 0.5
    np.testing.assert_allclose(gauss[4], 2 * np.cos(math.pi * (w - 0.5)) ** 2, atol=1e-6)  # x = 0: p'(0) = 0


def test_problem2_cost_cos2_closed_form_and_corollary4_is_not_the_minimiser():
    cos2 = BoundedOptimalNoise(low=0.0, high=1.0)
    for weight in (lambda t: math.exp(-t * t), lambda t: math.exp(-t)):
        j_cos2 = weighted_cost(lambda w, x: float(cos2.pdf(w)), weight=weight, low=0.0, high=1.0,
                               x_low=-1.0, x_high=1.0, n_x=11)
        mass, _ = integrate.quad(weight, -1.0, 1.0)
        assert j_cos2 == pytest.approx(4 * math.pi**2 * mass, rel=2e-3)
        printed = WeightedOptimalNoise(low=0.0, high=1.0, weight=weight)
        j_printed = weighted_cost(lambda w, x, p=printed: float(p.density(np.array(w), x)), weight=weight,
                                  low=0.0, high=1.0, x_low=-1.0, x_high=1.0, n_x=11)
        assert j_printed > j_cos2 * 1.02


def test_weighted_bad_inputs():
    with pytest.raises(InvalidParameterError):
        WeightedOptimalNoise(low=1.0, high=0.0, weight=lambda t: 1.0)
    with pytest.raises(InvalidParameterError, match="callable"):
        WeightedOptimalNoise(low=0.0, high=1.0, weight=2.0)
    with pytest.raises(InvalidParameterError, match="> 0"):
        WeightedOptimalNoise(low=0.0, high=1.0, weight=lambda t: 0.0).normaliser(0.5)
    with pytest.raises(InvalidParameterError):
        weighted_cost(lambda w, x: 1.0, weight=lambda t: 1.0, low=0.0, high=1.0, x_low=1.0, x_high=0.0)
