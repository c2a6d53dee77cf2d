"""Compression: the stated error bounds ‖M − U G‖₂ (dense SVD oracle) and the cache."""

from __future__ import annotations

import importlib

import networkx as nx
import numpy as np
import pytest

from dpcloak.domains import Grid
from dpcloak.models import graph_diffusion, heat_kernel_1d, heat_kernel_2d, matrix_model
from dpcloak.recovery.compress import clear_compression_cache, compress


@pytest.mark.parametrize(
    "model",
    [heat_kernel_1d(300, 200, 0.5), heat_kernel_1d(60, 30, 0.02), heat_kernel_2d(Grid((10, 12)), Grid((5, 6)), 0.05),
     graph_diffusion(nx.path_graph(30), 1.0), matrix_model(np.random.default_rng(0).standard_normal((20, 40)))],
    ids=["heat1d-large", "heat1d-small", "kron2d", "graph", "random"],
)
def test_error_bound_holds(model):
    comp = compress(model)
    dense = model.todense()
    actual = np.linalg.norm(dense - comp.U @ comp.G, 2)
    scale = np.linalg.norm(dense, 2)
    assert actual <= comp.error + 1e-14 * scale
    assert comp.error <= 1e-12 * scale
    np.testing.assert_allclose(comp.U.T @ comp.U, np.eye(comp.rank), atol=1e-12)


def test_heat_kernel_is_low_rank_and_cached():
    clear_compression_cache()
    a = compress(heat_kernel_1d(1000, 500, 1.0))
    assert a.rank <= 12  # issue: numerical rank ≈ 8 at 1e-13
    assert compress(heat_kernel_1d(1000, 500, 1.0)) is a  # equal model built again: cache hit


def test_projection_identity():
    model = heat_kernel_1d(80, 40, 0.1)
    comp = compress(model)
    rng = np.random.default_rng(1)
    f, y = rng.uniform(size=80), rng.standard_normal(40)
    proj = comp.project(y)
    lhs = np.linalg.norm(model.matvec(f) - y) ** 2
    rhs = np.linalg.norm(comp.G @ f - proj.z) ** 2 + proj.outside_norm**2
    assert lhs == pytest.approx(rhs, rel=1e-10)


def test_kronecker_weighted_gram_matches_dense():
    comp = compress(heat_kernel_2d(Grid((16, 20)), Grid((8, 10)), 0.05))
    assert comp.kron is not None
    d = np.random.default_rng(2).uniform(size=320)
    dense = (comp.G * d) @ comp.G.T
    np.testing.assert_allclose(comp.weighted_gram(d), dense, rtol=0, atol=1e-12 * np.abs(dense).max())


@pytest.mark.parametrize(("n", "m", "t"), [(1200, 600, 0.05), (1000, 500, 1.0), (900, 450, 0.005), (1000, 37, 0.1)])
def test_heat1d_chebyshev_factors_match_the_dense_svd(n, m, t):
    """The structured path (never reads the matrix) against the dense matrix's exact SVD."""
    model = heat_kernel_1d(n, m, t)
    comp = compress(model)
    dense = model.todense()
    s = np.linalg.svd(dense, compute_uv=False)
    assert comp.rank == int(np.count_nonzero(s > 1e-13 * s[0]))
    np.testing.assert_allclose(comp.singular_values, s[: comp.rank], rtol=0, atol=1e-13 * s[0])  # Weyl: ± ‖E‖₂
    actual = np.linalg.norm(dense - comp.U @ comp.G, 2)
    assert actual <= comp.error + 1e-14 * s[0]  # the check's own rounding, as in test_error_bound_holds
    assert comp.error <= 1e-12 * s[0]


def test_heat1d_cache_key_is_its_parameters(monkeypatch):
    """Issue 20: hashing the operator cost 0.5 s at n = 8000; a heat kernel is keyed by (n, m, T)."""
    mod = importlib.import_module("dpcloak.recovery.compress")  # the package re-exports the function
    clear_compression_cache()
    monkeypatch.setattr(mod, "_digest", lambda *a: pytest.fail("the operator was hashed"))
    a = compress(heat_kernel_1d(500, 250, 0.1))
    assert compress(heat_kernel_1d(500, 250, 0.1)) is a
    assert compress(heat_kernel_1d(500, 250, 0.2)) is not a


def test_kronecker_rows_products_match_the_dense_rows():
    comp = compress(heat_kernel_2d(Grid((16, 20)), Grid((8, 10)), 0.05))
    rows = comp.kron
    assert rows is not None
    G = comp.G  # formed from the factors
    np.testing.assert_allclose(G @ G.T, np.diag(comp.singular_values**2), atol=1e-12 * comp.singular_values[0] ** 2)
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal(320), rng.standard_normal(comp.rank)
    scale = np.abs(G).max()
    np.testing.assert_allclose(rows.dot(x), G @ x, rtol=0, atol=1e-12 * scale * np.abs(x).sum())
    np.testing.assert_allclose(rows.tdot(w), G.T @ w, rtol=0, atol=1e-12 * scale * np.abs(w).sum())
    idx = np.array([0, 7, 19, 20, 319])
    np.testing.assert_allclose(rows.columns(idx), G[:, idx], rtol=0, atol=1e-14 * scale)
    np.testing.assert_allclose(rows.column_norms(), np.linalg.norm(G, axis=0), rtol=1e-12)
