"""Compression: the stated error bounds ‖M − U G‖₂ (dense SVD oracle) and the cache."""

from __future__ import annotations

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
