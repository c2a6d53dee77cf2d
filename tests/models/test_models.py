"""Forward models: dot tests, the paper's formula entry by entry, and independent references
(scipy.linalg.expm for graph diffusion, numerical quadrature for the reflecting kernel)."""

import math
import re

import networkx as nx
import numpy as np
import pytest
import scipy.linalg

import dpcloak.models.graph as graph_module
from dpcloak.domains import Grid
from dpcloak.errors import DisconnectedGraphError, InvalidParameterError
from dpcloak.models import (
    GraphDiffusion,
    KroneckerHeatKernel2D,
    graph_diffusion,
    heat_kernel_1d,
    heat_kernel_2d,
    matrix_model,
)


def _models():
    rng = np.random.default_rng(0)
    grid = Grid((6, 5), extent=(1.2, 1.0))
    sensors = rng.uniform([0, 0], [1.2, 1.0], size=(7, 2))
    sbm = nx.stochastic_block_model([40, 40], [[0.3, 0.01], [0.01, 0.3]], seed=3)
    return {
        "heat1d": heat_kernel_1d(30, 12, 0.05),
        "heat1d-fft": heat_kernel_1d(400, 200, 0.05),
        "heat2d-free": heat_kernel_2d(grid, sensors, 0.02),
        "heat2d-walls": heat_kernel_2d(grid, sensors, 0.02, walls="reflecting"),
        "heat2d-kron": heat_kernel_2d(grid, Grid((3, 4), extent=(1.2, 1.0)), 0.02),
        "graph-dense": graph_diffusion(nx.path_graph(9), 0.7),
        "graph-lanczos": graph_diffusion(sbm, 0.5, dense_limit=10),
        "matrix": matrix_model(rng.normal(size=(4, 6))),
    }


@pytest.mark.parametrize("name", list(_models()))
def test_dot_test(name):
    """(M u)·v == u·(Mᵀ v) for random u, v: the adjoint is right."""
    model = _models()[name]
    rng = np.random.default_rng(1)
    m, n = model.shape
    u, v = rng.normal(size=n), rng.normal(size=m)
    lhs, rhs = model.matvec(u) @ v, u @ model.rmatvec(v)
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("name", list(_models()))
def test_operator_agrees_with_dense_matrix(name):
    model = _models()[name]
    dense = model.todense()
    rng = np.random.default_rng(2)
    x = rng.normal(size=(model.shape[1], 3))
    np.testing.assert_allclose(model.matmat(x), dense @ x, rtol=1e-10, atol=1e-12)
    idx = np.array([0, model.shape[1] - 1, 1])
    np.testing.assert_allclose(model.columns(idx), dense[:, idx], rtol=1e-10, atol=1e-12)
    pairs = model.domain.neighbours()[:5]
    want = np.linalg.norm(dense[:, pairs[:, 0]] - dense[:, pairs[:, 1]], axis=0)
    np.testing.assert_allclose(model.column_difference_norms(pairs), want, rtol=1e-9, atol=1e-14)
    assert model.aslinearoperator().matvec(x[:, 0]) == pytest.approx(dense @ x[:, 0])


def test_heat_kernel_1d_entry_by_entry():
    """Oracle: Gilbert & McMillan §2.1, A_ji = exp(−(i/n − j/m)²/(4T))/√(4πT), T = μt."""
    n, m, t, mu = 20, 7, 0.3, 0.5
    A = heat_kernel_1d(n, m, t, mu=mu).todense()
    T = mu * t
    for j in range(1, m + 1):
        for i in range(1, n + 1):
            want = math.exp(-((i / n - j / m) ** 2) / (4 * T)) / math.sqrt(4 * math.pi * T)
            assert A[j - 1, i - 1] == pytest.approx(want, rel=1e-14)


def _heat_entries(n: int, m: int, T: float, sensor_shift: int = 0) -> np.ndarray:
    """The paper's formula entry by entry in plain floats (``math.exp``), sensors optionally shifted by one slot."""
    out = np.empty((m, n))
    for j in range(1, m + 1):
        s = (j + sensor_shift) / m
        for i in range(1, n + 1):
            out[j - 1, i - 1] = math.exp(-((i / n - s) ** 2) / (4 * T)) / math.sqrt(4 * math.pi * T)
    return out


@pytest.mark.parametrize(("n", "m", "t"), [(400, 200, 0.05), (600, 200, 1e-4), (1000, 100, 0.5), (480, 360, 0.01)])
def test_matrix_free_heat_kernel_1d_equals_the_formula(n, m, t):
    """Issue 34: the FFT (Toeplitz) operator against the formula evaluated entry by entry, to 1e-12 relative;
    the same check against sensors shifted by one slot fails (the comparison can tell)."""
    model = heat_kernel_1d(n, m, t)
    assert model.matrix_free
    oracle = _heat_entries(n, m, 0.5 * t)
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(n, 2)), rng.normal(size=m)
    scale = np.abs(oracle) @ np.abs(x)  # |A||x| bounds every product's size
    assert np.max(np.abs(model.matmat(x) - oracle @ x) / scale) <= 1e-12
    assert np.max(np.abs(model.matvec(x[:, 0]) - oracle @ x[:, 0]) / scale[:, 0]) <= 1e-12
    assert np.max(np.abs(model.rmatvec(y) - oracle.T @ y) / (np.abs(oracle.T) @ np.abs(y))) <= 1e-12
    peak = oracle.max()
    np.testing.assert_allclose(model.todense(), oracle, rtol=1e-13, atol=1e-14 * peak)
    np.testing.assert_allclose(model.columns(np.array([0, n // 2, n - 1])), oracle[:, [0, n // 2, n - 1]],
                               rtol=1e-13, atol=1e-14 * peak)
    shifted = _heat_entries(n, m, 0.5 * t, sensor_shift=1)
    assert np.max(np.abs(model.matmat(x) - shifted @ x) / scale) > 1e-6


def test_heat_kernel_1d_keeps_the_dense_matrix_where_the_grid_is_not_shared():
    """Coprime n and m (common grid n·m points) and small models keep the dense path."""
    assert not heat_kernel_1d(401, 200, 0.05).matrix_free
    assert not heat_kernel_1d(100, 50, 0.05).matrix_free
    assert heat_kernel_1d(400, 200, 0.05).matrix_free


def test_matrix_free_heat_kernel_1d_is_built_in_linear_memory():
    """n = 128 000 sources, m = 64 000 sensors: the dense matrix would be 65.5 GB; the build allocates O(n)."""
    import tracemalloc

    tracemalloc.start()
    try:
        model = heat_kernel_1d(128_000, 64_000, 0.05)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert model.matrix_free
    assert peak < 64 * 128_000 * 8  # a few vectors of length 2n, nowhere near m·n·8 bytes
    y = model.matvec(np.eye(1, 128_000, 64_000).ravel())  # one column, against the formula
    T = 0.025
    want = np.exp(-((64_001 / 128_000 - np.arange(1, 64_001) / 64_000) ** 2) / (4 * T)) / math.sqrt(4 * math.pi * T)
    assert np.max(np.abs(y - want)) <= 1e-12 * np.max(want)


@pytest.mark.parametrize(("n", "m", "t"), [(400, 200, 0.05), (600, 200, 1e-4), (800, 100, 2e-6)])
def test_matrix_free_heat_kernel_1d_adjacent_differences_match_mpmath(n, m, t):
    """Δ2's column differences ‖A_i − A_{i+1}‖₂ on the FFT path against an oracle: each difference
    g(i/n − j/m) − g((i+1)/n − j/m) in 40-digit mpmath (no cancellation), squares summed by math.fsum.
    The maximum to 1e-14 relative (recomputed directly), every square to 1e-12 of the largest."""
    import mpmath

    mpmath.mp.dps = 40
    model = heat_kernel_1d(n, m, t)
    assert model.matrix_free
    T = mpmath.mpf(t) / 2

    def g(x):
        return mpmath.exp(-(x**2) / (4 * T)) / mpmath.sqrt(4 * mpmath.pi * T)

    L = math.lcm(n, m)  # i/n − j/m = (i·L/n − j·L/m)/L: one mpmath difference per integer offset
    step = L // n
    diff = {d: float(g(mpmath.mpf(d) / L) - g(mpmath.mpf(d + step) / L)) for d in range(-L, L + 1)}

    def norm(i, k):  # ‖A_i − A_k‖₂ for 0-based columns via the differences of adjacent columns
        return math.sqrt(math.fsum(math.fsum(diff[(c + 1) * step - (j + 1) * (L // m)] for c in range(i, k)) ** 2
                                   for j in range(m)))

    want = np.array([norm(i, i + 1) for i in range(n - 1)])
    got = model.column_difference_norms(model.domain.neighbours())
    assert abs(got.max() - want.max()) <= 1e-14 * want.max()
    assert np.max(np.abs(got**2 - want**2)) <= 1e-12 * want.max() ** 2  # squares: the FFT's absolute error
    some = np.array([[0, 1], [3, 7], [n - 2, n - 1]])  # any other pairs: directly from the columns
    np.testing.assert_allclose(model.column_difference_norms(some), [norm(i, k) for i, k in some], rtol=1e-12)


@pytest.mark.parametrize("walls", [None, "reflecting"])
def test_kronecker_column_differences_from_the_factors(walls):
    """Issue 34: grid neighbours' ‖M_p − M_q‖₂ as a product of factor norms, against the differences of the
    columns of the full matrix (free space: the 2-D formula entry by entry; walls: kron of the factors);
    pairs across rows and columns, and a pair with itself, go through the general path."""
    grid, sensor_grid, t = Grid((8, 10), extent=(0.8, 1.0)), Grid((4, 5), extent=(0.8, 1.0)), 0.03
    model = heat_kernel_2d(grid, sensor_grid, t, walls=walls)
    if walls is None:
        T = 0.5 * t
        sq = ((sensor_grid.coordinates()[:, None, :] - grid.coordinates()[None, :, :]) ** 2).sum(axis=2)
        full = np.exp(-sq / (4 * T)) / (4 * math.pi * T)
    else:
        full = np.kron(*model.factors)
    pairs = np.concatenate([grid.neighbours(), [[0, 11], [5, 79], [33, 33], [79, 0]]])
    want = np.linalg.norm(full[:, pairs[:, 0]] - full[:, pairs[:, 1]], axis=0)
    np.testing.assert_allclose(model.column_difference_norms(pairs), want, rtol=1e-12, atol=1e-15 * want.max())
    assert model.column_difference_norms(np.array([[33, 33]]))[0] == 0.0


def test_kronecker_model_equals_dense_model_at_sensor_grid_points():
    grid = Grid((6, 5))
    sensor_grid = Grid((3, 4))
    kron = heat_kernel_2d(grid, sensor_grid, 0.01, walls="reflecting")
    assert isinstance(kron, KroneckerHeatKernel2D)
    dense = heat_kernel_2d(grid, sensor_grid.coordinates(), 0.01, walls="reflecting")
    np.testing.assert_allclose(kron.todense(), dense.todense(), rtol=1e-13)


def test_kronecker_products_of_sparse_maps_from_their_columns_equal_the_dense_matrix(monkeypatch):
    """Oracle: ``kron(K_y, K_x) @ x`` formed densely. A map of 3 sources (and the zero map) goes through the
    gathered columns, a dense map through the factor products; the two are the same operator (rtol 1e-13), and
    the dense map never gathers columns (a ``columns`` that raises is not called)."""
    model = heat_kernel_2d(Grid((30, 40)), Grid((6, 7)), 0.02)
    dense = np.kron(*model.factors)
    rng = np.random.default_rng(12)
    sparse = np.zeros(model.shape[1])
    sparse[rng.choice(sparse.size, 3, replace=False)] = rng.uniform(1.0, 5.0, 3)
    calls = []
    real = model.columns
    monkeypatch.setattr(model, "columns", lambda index: calls.append(len(index)) or real(index))
    for x in (sparse, np.zeros(model.shape[1])):
        np.testing.assert_allclose(model.matvec(x), dense @ x, rtol=1e-13, atol=1e-300)
    assert calls == [3, 0]
    monkeypatch.setattr(model, "columns", lambda index: pytest.fail("a dense map gathered columns"))
    full = rng.random(model.shape[1])
    np.testing.assert_allclose(model.matvec(full), dense @ full, rtol=1e-13)


def test_reflecting_walls_conserve_heat_and_free_kernel_leaks():
    """Oracle: the Neumann kernel integrates to 1 over the box (quadrature on a fine sensor grid)."""
    grid = Grid((4, 4))
    fine = Grid((200, 200))
    walls = heat_kernel_2d(grid, fine, 0.05, walls="reflecting").todense()
    free = heat_kernel_2d(grid, fine, 0.05).todense()
    cell_area = 1.0 / fine.size
    np.testing.assert_allclose(walls.sum(axis=0) * cell_area, 1.0, rtol=1e-4)
    assert np.all(free.sum(axis=0) * cell_area < 0.999)  # heat escapes through the walls


def test_graph_diffusion_matches_scipy_expm_and_conserves_heat():
    g = nx.karate_club_graph()
    model = graph_diffusion(g, 0.3, conductance="weight")  # karate club weights are interaction counts
    L = nx.laplacian_matrix(g, weight="weight").toarray().astype(float)
    np.testing.assert_allclose(model.todense(), scipy.linalg.expm(-0.3 * L), atol=1e-12)
    np.testing.assert_allclose(model.todense().sum(axis=0), 1.0, atol=1e-12)


def test_graph_diffusion_lanczos_and_matrix_free_paths_match_expm(monkeypatch):
    sbm = nx.stochastic_block_model([200, 200], [[0.3, 0.01], [0.01, 0.3]], seed=5)
    L = nx.laplacian_matrix(sbm).toarray().astype(float)
    exact = scipy.linalg.expm(-1.5 * L)
    lanczos = graph_diffusion(sbm, 1.5, dense_limit=10)
    assert lanczos.is_spectral and lanczos.eigenvalues is not None and len(lanczos.eigenvalues) < 20
    np.testing.assert_allclose(lanczos.todense(), exact, atol=1e-12)
    monkeypatch.setattr(graph_module, "DENSE_FALLBACK_LIMIT", 0)
    free = GraphDiffusion(lanczos.graph_domain, 1e-3, dense_limit=10)  # slow decay, no dense fallback
    assert not free.is_spectral
    np.testing.assert_allclose(free.todense(), scipy.linalg.expm(-1e-3 * L), atol=1e-10)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: heat_kernel_1d(0, 5, 0.1), "n must be an integer >= 1, got 0"),
        (lambda: heat_kernel_1d(5, -1, 0.1), "m must be an integer >= 1, got -1"),
        (lambda: heat_kernel_1d(5, 5, 0.0), "t must lie in (0, inf), got 0"),
        (lambda: heat_kernel_1d(5, 5, float("nan")), "t must be a finite real number"),
        (lambda: heat_kernel_1d(5, 5, 0.1, mu=-1), "mu must lie in (0, inf)"),
        (lambda: heat_kernel_2d(Grid((2, 2)), [[0.5, 1.5]], 0.1), "sensors must lie inside the floor"),
        (lambda: heat_kernel_2d(Grid((2, 2)), [[0.5, 0.5]], 0.1, walls="open"), "walls must be one of"),
        (lambda: heat_kernel_2d(Grid((2, 2)), [0.5, 0.5], 0.1), "sensors must have shape (*, 2)"),
        (lambda: heat_kernel_2d([[1]], [[0.5, 0.5]], 0.1), "source_grid must be a dpcloak Grid or Sites"),
        (lambda: heat_kernel_2d(Grid((2, 2)), Grid((2, 2), extent=(2, 2)), 0.1), "must equal the source grid extent"),
        (lambda: graph_diffusion(nx.path_graph(4), -1.0), "tau must lie in (0, inf)"),
        (lambda: matrix_model([[1.0, np.inf]]), "matrix must be finite"),
        (lambda: matrix_model([1.0, 2.0]), "matrix must be a 2-D array"),
        (lambda: heat_kernel_1d(5, 3, 0.1).matvec([1.0, 2.0]), "x must have shape (5)"),
        (lambda: heat_kernel_1d(5, 3, 0.1).rmatvec([1.0, np.nan, 0.0]), "y must be finite"),
    ],
)
def test_bad_model_inputs_raise_clear_errors(make, message):
    with pytest.raises(InvalidParameterError) as info:
        make()
    assert message in str(info.value)


def test_graph_diffusion_refuses_disconnected_graph():
    with pytest.raises(DisconnectedGraphError):
        graph_diffusion(nx.Graph([(0, 1), (2, 3)]), 1.0)


def test_lanczos_certification_refuses_a_spectrum_with_a_missed_eigenvector():
    """A privacy-critical guard: an incomplete low spectrum must never be accepted."""
    model = graph_diffusion(nx.stochastic_block_model([200, 200], [[0.3, 0.01], [0.01, 0.3]], seed=5), 1.5)
    U = model.eigenvectors
    assert U is not None
    threshold = -math.log(graph_module.SPECTRAL_TOLERANCE) / model.tau
    assert model._nothing_missed(U, threshold)
    assert not model._nothing_missed(U[:, :-1], threshold)


def test_heat_kernel_at_sites_is_the_formula_and_walls_conserve_heat():
    """Oracle: the 2-D kernel exp(−d²/4T)/(4πT) evaluated directly; reflecting walls integrate to 1 over the room."""
    from dpcloak.domains import Sites

    rng = np.random.default_rng(4)
    src = rng.uniform(0, 60, (9, 2))
    sensors = rng.uniform(0, 60, (5, 2))
    T = 0.5 * 80.0
    model = heat_kernel_2d(Sites(src), sensors, 80.0)
    d2 = ((sensors[:, None] - src[None]) ** 2).sum(axis=2)
    np.testing.assert_allclose(model.todense(), np.exp(-d2 / (4 * T)) / (4 * np.pi * T), rtol=1e-12)
    fine = np.stack(np.meshgrid(np.arange(0.25, 60, 0.5), np.arange(0.25, 40, 0.5), indexing="ij"), -1).reshape(-1, 2)
    walls = heat_kernel_2d(Sites(src[src[:, 1] < 40]), fine, 80.0, walls="reflecting", box=((0, 60), (0, 40)))
    np.testing.assert_allclose(walls.todense().sum(axis=0) * 0.25, 1.0, rtol=1e-6)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda S: heat_kernel_2d(S, [[1.0, 1.0]], 1.0, walls="reflecting"), "needs the room: box="),
        (lambda S: heat_kernel_2d(S, [[1.0, 1.0]], 1.0, box=((0, 9), (0, 9))), "box is only used with walls"),
        (lambda S: heat_kernel_2d(S, [[1.0, 99.0]], 1.0, walls="reflecting", box=((0, 9), (0, 9))),
         "sensors must lie inside the floor [0, 9] x [0, 9]"),
        (lambda S: heat_kernel_2d(S, [[1.0, 1.0]], 1.0, walls="reflecting", box=((0, 9), (9, 0))), "box[1] must be"),
        (lambda S: heat_kernel_2d(S, [[1.0, 1.0]], 1.0, walls="reflecting", box=(0, 9)), "box must be"),
        (lambda S: heat_kernel_2d(S, Grid((2, 2)), 1.0), "sensors must be an array of (x, y)"),
    ],
)
def test_heat_kernel_at_sites_refusals(make, message):
    from dpcloak.domains import Sites

    with pytest.raises(InvalidParameterError, match=re.escape(message)):
        make(Sites([[1.0, 1.0], [5.0, 5.0]]))
