"""Graph diffusion read at a subset of nodes (``LocalGraphDiffusion``): oracle = dense ``scipy.linalg.expm``."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.linalg

from dpcloak.domains import GraphDomain
from dpcloak.errors import InvalidParameterError
from dpcloak.models import LocalGraphDiffusion, graph_diffusion
from dpcloak.models import graph_local as gl
from dpcloak.privacy.sensitivity import l2_sensitivity


def _graphs():
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(18, 20))
    rgg = nx.random_geometric_graph(400, 0.11, seed=3)
    rgg = nx.convert_node_labels_to_integers(rgg.subgraph(max(nx.connected_components(rgg), key=len)).copy())
    for u, v in rgg.edges:  # unequal conductances: the uniformization rate is the largest weighted degree
        rgg.edges[u, v]["conductance"] = 0.5 + (u * 7 + v * 3) % 5 / 4
    return {"grid": grid, "rgg": rgg}


def _dense_delta2(domain, tau, sensors):
    block = scipy.linalg.expm(-tau * domain.laplacian().toarray())[sensors]
    pairs = domain.neighbours()
    return block, float(np.linalg.norm(block[:, pairs[:, 0]] - block[:, pairs[:, 1]], axis=0).max())


@pytest.mark.parametrize("kind", ["grid", "rgg"])
@pytest.mark.parametrize("tau", [0.3, 2.0])
def test_block_and_delta2_match_dense_expm(kind, tau):
    domain = GraphDomain(_graphs()[kind])
    sensors = np.sort(np.random.default_rng(1).choice(domain.size, 60, replace=False))
    model = graph_diffusion(domain, tau, sensors=sensors)
    assert isinstance(model, LocalGraphDiffusion) and model.shape == (60, domain.size)
    block, want = _dense_delta2(domain, tau, sensors)
    got = model.todense()
    assert np.all(got <= block + 1e-15)  # an entrywise lower bound
    assert np.abs(got - block).max() <= model.truncation_error + 1e-15
    delta2 = l2_sensitivity(model)
    assert want <= delta2 <= want + 2 * model.truncation_error + 1e-14
    assert model.truncation_error < 1e-12


def test_coarse_truncation_stays_certified(monkeypatch):
    """With a loose tail and pruning the error is visible, and the bound still covers it (both sides)."""
    monkeypatch.setattr(gl, "TAIL", 1e-4)
    monkeypatch.setattr(gl, "PRUNE", 1e-5)
    domain = GraphDomain(_graphs()["rgg"])
    sensors = np.arange(0, domain.size, 7)
    model = LocalGraphDiffusion(domain, 2.0, sensors)
    block, want = _dense_delta2(domain, 2.0, sensors)
    column_errors = np.linalg.norm(block - model.todense(), axis=0)
    assert 1e-6 < column_errors.max() <= model.truncation_error
    assert want <= l2_sensitivity(model)


def test_products_use_the_block():
    domain = GraphDomain(_graphs()["grid"])
    sensors = np.array([0, 5, 77, 200])
    model = graph_diffusion(domain, 1.0, sensors=sensors)
    x = np.random.default_rng(2).random(domain.size)
    dense = model.todense()
    assert np.allclose(model.matvec(x), dense @ x)
    assert np.allclose(model.rmatvec(np.ones(4)), dense.sum(axis=0))
    assert np.allclose(model.columns(np.array([3, 9])), dense[:, [3, 9]])


def test_refuses_above_the_limits_naming_the_estimate(monkeypatch):
    domain = GraphDomain(_graphs()["grid"])
    monkeypatch.setattr(gl, "MEMORY_LIMIT", 1000)
    with pytest.raises(InvalidParameterError, match=r"estimated to need [0-9.]+ GiB"):
        graph_diffusion(domain, 2.0, sensors=np.arange(50))
    monkeypatch.setattr(gl, "MEMORY_LIMIT", 2**40)
    monkeypatch.setattr(gl, "WORK_LIMIT", 10.0)
    with pytest.raises(InvalidParameterError, match="neighbour updates"):
        graph_diffusion(domain, 2.0, sensors=np.arange(50))


@pytest.mark.parametrize(
    ("sensors", "message"),
    [([], "non-empty"), ([0.5, 1.0], "node indices"), ([0, 360], r"\[0, 360\)"), ([-1], r"\[0, 360\)"),
     ([3, 3], "distinct")],
)
def test_bad_sensors_are_refused(sensors, message):
    with pytest.raises(InvalidParameterError, match=message):
        graph_diffusion(_graphs()["grid"], 1.0, sensors=sensors)
