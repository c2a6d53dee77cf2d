"""Sensitivity: the exact Δ2 against direct computation, and every published bound against it."""

import math
import time

import networkx as nx
import numpy as np
import pytest
import scipy.linalg

from dpcloak.domains import GraphDomain, Grid, Sites, proximity_graph
from dpcloak.errors import InvalidParameterError
from dpcloak.models import graph_diffusion, heat_kernel_1d, heat_kernel_2d, matrix_model
from dpcloak.privacy.mechanisms import GaussianMechanism
from dpcloak.privacy.sensitivity import (
    Relation,
    complete_graph_delta2,
    complete_graph_delta2_published,
    condition_lower_bound,
    condition_number,
    graph_spectral_bound,
    heat1d_bound,
    heat1d_bound_published,
    l2_sensitivity,
    relation_sensitivity,
    star_graph_delta2,
    star_graph_delta2_published,
    worst_neighbours,
)


def _direct_heat1d_delta2(n, m, t, mu=0.5):
    """Oracle: Gilbert & McMillan Prop. 4, max_i ||A_i − A_{i+1}||₂ from the formula, one column pair at a time."""
    T = mu * t
    best = 0.0
    for i in range(1, n):
        diff = [
            (math.exp(-((i / n - j / m) ** 2) / (4 * T)) - math.exp(-(((i + 1) / n - j / m) ** 2) / (4 * T)))
            / math.sqrt(4 * math.pi * T)
            for j in range(1, m + 1)
        ]
        best = max(best, math.sqrt(sum(d * d for d in diff)))
    return best


def test_paper_default_matches_direct_computation_to_1e12():
    exact = l2_sensitivity(heat_kernel_1d(100, 50, 0.1, mu=0.5))
    assert exact == pytest.approx(_direct_heat1d_delta2(100, 50, 0.1), rel=0, abs=1e-12)


def test_alpha_scales_linearly_and_worst_pair_is_adjacent():
    model = heat_kernel_1d(40, 20, 0.05)
    assert l2_sensitivity(model, alpha=2.5) == pytest.approx(2.5 * l2_sensitivity(model), rel=1e-15)
    i, j = worst_neighbours(model)
    assert j == i + 1


def test_grid_model_sensitivity_equals_brute_force_over_edge_neighbours():
    grid = Grid((5, 4))
    model = heat_kernel_2d(grid, Grid((3, 3)), 0.01, walls="reflecting")
    M = model.todense()
    brute = max(
        np.linalg.norm(M[:, a] - M[:, b])
        for a in range(grid.size)
        for b in range(grid.size)
        if abs(a // 4 - b // 4) + abs(a % 4 - b % 4) == 1
    )
    assert l2_sensitivity(model) == pytest.approx(brute, rel=1e-12)


def test_graph_with_lengths_divides_by_edge_length_in_metres_or_counts_hops():
    g = nx.path_graph(4)
    g[1][2]["length"] = 2.0
    model = graph_diffusion(GraphDomain(g), 0.4)
    A = model.todense()
    d01, d12, d23 = (np.linalg.norm(A[:, k] - A[:, k + 1]) for k in range(3))
    assert l2_sensitivity(model, unit="m") == pytest.approx(max(d01, d12 / 2.0, d23), rel=1e-12)
    assert l2_sensitivity(model, alpha=3.0, unit="hops") == pytest.approx(3 * max(d01, d12, d23), rel=1e-12)
    np.testing.assert_allclose(A, scipy.linalg.expm(-0.4 * nx.laplacian_matrix(nx.path_graph(4)).toarray()),
                               atol=1e-12)  # lengths do not enter the operator


def test_bare_alpha_on_a_graph_with_metre_lengths_is_refused():
    """The issue's trap: α = 1 silently meant one metre. Now the unit must be said."""
    pos = np.array([[0.0, 0.0], [120.0, 0.0], [240.0, 30.0], [90.0, 200.0], [300.0, 220.0]])
    model = graph_diffusion(proximity_graph(pos, method="delaunay"), 2000.0)
    with pytest.raises(InvalidParameterError, match=r"alpha needs its unit.*unit='m'"):
        l2_sensitivity(model)
    with pytest.raises(InvalidParameterError, match="unit='m' needs pairs with lengths"):
        l2_sensitivity(heat_kernel_1d(5, 5, 0.1), unit="m")


def test_metre_weighted_graph_gives_a_sensible_delta2_and_sigma_in_people():
    """Edges 100–250 m long. Read as conductances (the old bug) the operator was fully mixed and Δ2 ≈ 1e-17;
    with lengths and 1/d² conductances, one person moved 150 m changes the readings by a sizeable
    fraction of a person, and σ at (1, 1e-5) is a few people: a usable, honest calibration."""
    pos = np.array([[0.0, 0.0], [150.0, 0.0], [300.0, 0.0], [0.0, 150.0], [150.0, 150.0], [300.0, 150.0]])
    graph = proximity_graph(pos, method="delaunay")
    model = graph_diffusion(graph, 150.0**2 / 2)  # heat spreads about one block (sqrt(2 tau) = 150 m)
    A = model.todense()
    brute = max(np.linalg.norm(A[:, i] - A[:, j]) for i in range(6) for j in range(i + 1, 6)
                if np.linalg.norm(pos[i] - pos[j]) <= 150.0 + 1e-9)
    delta2 = relation_sensitivity(model, Relation.move(150.0, "m"))
    assert delta2 == pytest.approx(brute, rel=1e-12)
    assert 0.2 < delta2 < 1.5
    sigma = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=delta2).sigma
    assert 0.5 < sigma < 6.0
    # the old reading of metre-valued edge weights as conductances: fully mixed, Δ2 at rounding level
    mixed = nx.Graph()
    for u, v, d in graph.graph.edges(data=True):
        mixed.add_edge(u, v, conductance=d["length"])
    assert relation_sensitivity(graph_diffusion(mixed, 150.0**2 / 2), Relation.move(1.0, "hops")) < 1e-12
    # and naming the metres "weight" is refused with a message naming both attributes
    weighted = nx.Graph([(u, v, {"weight": d["length"]}) for u, v, d in graph.graph.edges(data=True)])
    with pytest.raises(InvalidParameterError, match=r"'length'.*'conductance'"):
        graph_diffusion(weighted, 1.0)


def _brute_relation(M, dist, alpha, kind):
    n = M.shape[1]
    move = max((np.linalg.norm(M[:, i] - M[:, j]) for i in range(n) for j in range(n)
                if i != j and dist[i, j] <= alpha), default=0.0)
    add = max(np.linalg.norm(M[:, i]) for i in range(n))
    return {"move": move, "add-remove": add, "move-or-add-remove": max(move, add)}[kind]


@pytest.mark.parametrize("kind", ["move", "add-remove", "move-or-add-remove"])
@pytest.mark.parametrize("alpha", [12.0, 40.0, 500.0])
def test_relation_sensitivity_equals_brute_force_over_count_vectors(kind, alpha):
    """Oracle: enumerate every neighbouring pair of count vectors differing by one person (numpy, no dpcloak)."""
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 100, (15, 2))
    sensors = rng.uniform(0, 100, (6, 2))
    model = heat_kernel_2d(Sites(pos), sensors, 200.0)
    dist = np.linalg.norm(pos[:, None] - pos[None], axis=2)
    relation = Relation.add_remove() if kind == "add-remove" else Relation(kind, alpha, "m")
    got = relation_sensitivity(model, relation)
    assert got == pytest.approx(_brute_relation(model.todense(), dist, alpha, kind), rel=1e-12)
    # and directly: the readings of two neighbouring count vectors differ by exactly that much at worst
    M = model.todense()
    f = rng.integers(1, 5, 15).astype(float)
    worst = 0.0
    for i in range(15):
        for j in range(15):
            g = f.copy()
            if kind != "add-remove" and i != j and dist[i, j] <= alpha:
                g[i] -= 1
                g[j] += 1
                worst = max(worst, np.linalg.norm(M @ f - M @ g))
            if kind != "move" and i == j:
                g[i] += 1
                worst = max(worst, np.linalg.norm(M @ f - M @ g))
    assert worst == pytest.approx(got, rel=1e-12)


def test_relation_in_hops_on_a_grid_and_a_graph():
    grid = Grid((4, 5), extent=(40.0, 50.0))
    model = heat_kernel_2d(grid, [[5.0, 5.0], [35.0, 45.0], [20.0, 25.0]], 30.0)
    M = model.todense()
    rc = np.array([(a // 5, a % 5) for a in range(20)])
    hops = np.abs(rc[:, None] - rc[None]).sum(axis=2)
    assert relation_sensitivity(model, Relation.move(2, "hops")) == pytest.approx(
        _brute_relation(M, hops, 2, "move"), rel=1e-12)
    # metres on a grid: Euclidean distance between cell centres (10 m apart)
    metres = np.linalg.norm(10.0 * (rc[:, None] - rc[None]), axis=2)
    assert relation_sensitivity(model, Relation.move(15.0, "m")) == pytest.approx(
        _brute_relation(M, metres, 15.0, "move"), rel=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m: relation_sensitivity(m, Relation.move(5.0)), r"alpha=5 m is smaller than the smallest distance"),
        (lambda m: relation_sensitivity(m, Relation.move(0.5, "hops")), "needs a graph or grid"),
        (lambda m: Relation("move", 10.0), "relation unit must be given"),
        (lambda m: Relation("move", 10.0, "km"), "relation unit must be one of 'm', 'hops'"),
        (lambda m: Relation("add-remove", 3.0), "takes no alpha"),
        (lambda m: Relation("swap", 3.0, "m"), "relation kind must be one of"),
        (lambda m: Relation.move(-1.0), r"relation alpha must lie in \(0, inf\)"),
        (lambda m: relation_sensitivity(m, "move 5 m"), "relation must be a Relation"),
    ],
)
def test_relation_refusals_are_clear(call, match):
    model = heat_kernel_2d(Sites([[0.0, 0.0], [10.0, 0.0], [0.0, 30.0]]), [[1.0, 1.0]], 50.0)
    with pytest.raises(InvalidParameterError, match=match):
        call(model)


def test_plain_matrix_is_accepted():
    M = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])
    assert l2_sensitivity(M) == pytest.approx(math.sqrt(4 + 1))


@pytest.mark.parametrize("n", [20, 100, 400])
@pytest.mark.parametrize("m", [1, 10, 50, 200])
@pytest.mark.parametrize("t", [1e-4, 1e-2, 0.1, 1.0, 10.0])
def test_heat1d_bounds_dominate_exact_value(n, m, t):
    exact = l2_sensitivity(heat_kernel_1d(n, m, t))
    assert exact <= heat1d_bound_published(n, m, t).value * (1 + 1e-12)
    assert exact <= heat1d_bound(n, m, t).value * (1 + 1e-12)


def test_heat1d_bound_has_the_published_asymptotics_in_m_and_n():
    """Prop. 4: Δ2 = O(√m/(n T^1.5)); the corrected bound scales exactly as √m/n in m and n."""
    b = heat1d_bound(1000, 100, 1.0).value
    assert heat1d_bound(1000, 400, 1.0).value == pytest.approx(2 * b, rel=1e-12)
    assert heat1d_bound(4000, 100, 1.0).value < b / 3.9


def test_condition_lower_bound_holds_when_n_le_m_and_is_flagged_otherwise():
    rng = np.random.default_rng(7)
    for _ in range(20):
        M = rng.normal(size=(8, 5))
        M /= np.linalg.norm(M, 2)
        exact = l2_sensitivity(M)
        thesis, paper = condition_lower_bound(M), condition_lower_bound(M, variant="paper")
        assert thesis.applies and paper.applies
        assert exact >= thesis.value * (1 - 1e-12)
        assert exact >= paper.value * (1 - 1e-12)
    # Counter-example with n > m: identical columns give Δ2 = 0 while κ₂ = 1.
    flat = np.array([[1.0, 1.0]]) / math.sqrt(2)
    assert l2_sensitivity(flat) == 0.0 and condition_number(flat) == pytest.approx(1.0)
    bound = condition_lower_bound(flat)
    assert not bound.applies and "n <= m" in bound.reason


def test_condition_number_matches_numpy():
    M = np.random.default_rng(3).normal(size=(6, 4))
    assert condition_number(M) == pytest.approx(np.linalg.cond(M), rel=1e-12)


@pytest.mark.parametrize(
    "maker",
    [
        lambda: nx.path_graph(12),
        lambda: nx.star_graph(7),
        lambda: GraphDomain(nx.karate_club_graph(), conductance="weight"),
        lambda: nx.stochastic_block_model([30, 30], [[0.3, 0.02], [0.02, 0.3]], seed=1),
    ],
)
@pytest.mark.parametrize("tau", [0.1, 1.0, 3.0])
def test_lemma_8_9_spectral_bound_dominates(maker, tau):
    model = graph_diffusion(maker(), tau)
    assert l2_sensitivity(model) <= graph_spectral_bound(model).value * (1 + 1e-10)


@pytest.mark.parametrize("n", [3, 4, 6, 10, 25])
@pytest.mark.parametrize("tau", [0.05, 0.3, 1.0])
def test_table_8_2_corrected_closed_forms_equal_exact(n, tau):
    assert complete_graph_delta2(n, tau) == pytest.approx(
        l2_sensitivity(graph_diffusion(nx.complete_graph(n), tau)), rel=1e-9
    )
    assert star_graph_delta2(n, tau) == pytest.approx(
        l2_sensitivity(graph_diffusion(nx.star_graph(n - 1), tau)), rel=1e-9
    )


def test_table_8_2_as_printed_disagrees_with_exact():
    """The documented discrepancies: complete graph off by the exponent, star graph for n >= 4."""
    for n, tau in [(5, 0.3), (10, 1.0)]:
        exact_c = l2_sensitivity(graph_diffusion(nx.complete_graph(n), tau))
        exact_s = l2_sensitivity(graph_diffusion(nx.star_graph(n - 1), tau))
        assert abs(complete_graph_delta2_published(n, tau) - exact_c) > 0.01 * exact_c
        assert abs(star_graph_delta2_published(n, tau) - exact_s) > 0.005 * exact_s
    assert star_graph_delta2_published(3, 0.5) == pytest.approx(star_graph_delta2(3, 0.5), rel=1e-14)


def test_large_heat_model_is_fast():
    """Issue 2: n = 10⁴ sources, m = 10³ sensors well under a second (measured in benchmarks/; the
    bound here is 3 s so that a loaded CI machine does not flake, yet a 10x regression fails)."""
    model = heat_kernel_1d(10_000, 1_000, 0.1)
    start = time.perf_counter()
    l2_sensitivity(model)
    assert time.perf_counter() - start < 3.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: l2_sensitivity(heat_kernel_1d(5, 5, 0.1), alpha=0), "alpha must lie in (0, inf), got 0"),
        (lambda: l2_sensitivity(heat_kernel_1d(5, 5, 0.1), alpha=float("inf")), "alpha must be a finite"),
        (lambda: l2_sensitivity(heat_kernel_1d(1, 5, 0.1)), "no neighbouring pairs"),
        (lambda: l2_sensitivity([[np.nan, 1.0]]), "matrix must be finite"),
        (lambda: heat1d_bound(0, 5, 0.1), "n must be an integer >= 1"),
        (lambda: heat1d_bound_published(5, 5, -0.1), "t must lie in (0, inf)"),
        (lambda: condition_lower_bound(np.eye(2), variant="loose"), "variant must be"),
        (lambda: graph_spectral_bound(heat_kernel_1d(5, 5, 0.1)), "model must be a GraphDiffusion"),
        (lambda: complete_graph_delta2(1, 0.1), "n must be an integer >= 2"),
        (lambda: star_graph_delta2(4, 0), "tau must lie in (0, inf)"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, message):
    with pytest.raises(InvalidParameterError) as info:
        call()
    assert message in str(info.value)


def test_matrix_model_with_mismatched_domain_is_refused():
    with pytest.raises(InvalidParameterError, match="3 columns but its domain has 4"):
        matrix_model(np.ones((2, 3)), Grid((2, 2)))


def _exact_pairs(pos, alpha, tolerance):
    """Oracle: every pair whose exact distance (rational arithmetic on the float coordinates) is ≤ α (1 + tolerance)."""
    from fractions import Fraction

    bound = (Fraction(alpha) * (1 + tolerance)) ** 2
    return {(i, j) for i in range(len(pos)) for j in range(i + 1, len(pos))
            if sum((Fraction(float(a)) - Fraction(float(b))) ** 2
                   for a, b in zip(pos[i], pos[j], strict=True)) <= bound}


def test_move_relation_keeps_every_pair_at_its_own_distance():
    """Regression (issue 28, defect 2): a float distance test dropped 3 % of pairs at α = their own np.hypot distance.

    Oracle: brute force over pairs in exact fractions; every pair at exact distance ≤ α is kept, and nothing
    beyond α (1 + PAIR_TOLERANCE) is added.
    """
    from dpcloak.privacy.sensitivity import PAIR_TOLERANCE, _pairs_within

    rng = np.random.default_rng(28)
    for _ in range(600):
        pos = rng.uniform(-100, 100, (3, 2)) * 10.0 ** rng.integers(-3, 4)
        a, b = rng.choice(3, 2, replace=False)
        for alpha in (float(np.hypot(*(pos[a] - pos[b]))), float(np.linalg.norm(pos[a] - pos[b]))):
            got = {tuple(p) for p in _pairs_within(Sites(pos), alpha, "m").tolist()}
            assert _exact_pairs(pos, alpha, 0) <= got <= _exact_pairs(pos, alpha, PAIR_TOLERANCE)
            assert (min(a, b), max(a, b)) in got


def test_three_sensors_on_the_boundary_give_the_full_delta2():
    """Defect 2's reproduction: α = np.hypot(A − B) must count the move A → B (brute-force Δ2 over pairs)."""
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(400):
        pos = rng.uniform(0, 100, (3, 2))
        alpha = float(np.hypot(*(pos[0] - pos[1])))
        if np.linalg.norm(pos[0] - pos[2]) <= alpha * 1.5 or np.linalg.norm(pos[1] - pos[2]) <= alpha * 1.5:
            continue  # keep (0, 1) the only pair within α
        M = rng.uniform(0, 1, (3, 3))
        got = relation_sensitivity(matrix_model(M, Sites(pos)), Relation.move(alpha))
        assert got == pytest.approx(float(np.linalg.norm(M[:, 0] - M[:, 1])), rel=1e-12)
        found += 1
    assert found > 50


def test_two_sensors_on_the_boundary_and_an_alpha_below_every_pair():
    """A two-site network at α = its distance works; α a hair below admits no pair and is refused naming alpha."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        pos = rng.uniform(-50, 50, (2, 2))
        M = rng.uniform(0, 1, (2, 2))
        model = matrix_model(M, Sites(pos))
        alpha = float(np.hypot(*(pos[0] - pos[1])))
        assert relation_sensitivity(model, Relation.move(alpha)) == pytest.approx(
            float(np.linalg.norm(M[:, 0] - M[:, 1])), rel=1e-12)
        with pytest.raises(InvalidParameterError, match=r"relation alpha=.* is smaller than the smallest distance"):
            relation_sensitivity(model, Relation.move(alpha * (1 - 1e-12)))


def test_graph_lengths_without_positions_round_outward():
    """Shortest paths summed in floats: a pair at its computed path length is kept (oracle: Fraction path sums)."""
    from fractions import Fraction

    graph = nx.path_graph(4)
    lengths = [0.1, 0.2, 0.3]
    for (u, v), length in zip(graph.edges, lengths, strict=True):
        graph.edges[u, v]["length"] = length
    domain = GraphDomain(graph)
    model = matrix_model(np.eye(4), domain)
    exact = sum(Fraction(x) for x in lengths)  # nodes 0 and 3
    alpha = float(exact)  # the nearest double; 0.1 + 0.2 + 0.3 in floats is above it
    assert alpha < 0.1 + 0.2 + 0.3
    assert relation_sensitivity(model, Relation.move(alpha)) == pytest.approx(math.sqrt(2))
    from dpcloak.privacy.sensitivity import _pairs_within

    assert (0, 3) in {tuple(p) for p in _pairs_within(domain, alpha, "m").tolist()}
