"""Diffusion on a graph: ``A_G = exp(−τ L)`` (thesis section 8.3)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, overload

import networkx as nx
import numpy as np
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_int, check_real
from dpcloak.domains.graph import GraphDomain
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import LinearModel

if TYPE_CHECKING:  # imported when a local model is built: its compiled kernel needs numba
    from dpcloak.models.graph_local import LocalGraphDiffusion

__all__ = ["GraphDiffusion", "graph_diffusion"]

#: Eigenvalues ``exp(−τ s)`` below this (relative to the largest, 1) are dropped; the operator
#: error this causes is at most this number times ``‖x‖`` (``√2`` times it for column differences).
SPECTRAL_TOLERANCE = 1e-17

#: Above ``dense_limit`` a dense ``eigh`` is still the fallback up to this many nodes.
DENSE_FALLBACK_LIMIT = 6000


class GraphDiffusion(LinearModel):
    """``A_G = exp(−τ L)`` with ``L = D − W`` the weighted graph Laplacian; sensors on every node.

    The operator is represented by the eigenpairs of ``L`` whose weight ``exp(−τ s)`` is above
    :data:`SPECTRAL_TOLERANCE`: all of them from a dense ``eigh`` for moderate ``n``, the few
    smallest from sparse Lanczos (``eigsh``, certified complete by deflation) when the spectrum
    decays fast, which is the usual case for well-connected graphs; a dense ``eigh`` is the
    fallback up to :data:`DENSE_FALLBACK_LIMIT` nodes. :attr:`truncation_error` bounds
    ``‖A_G − Â_G‖₂``. When neither fits, products use :func:`scipy.sparse.linalg.expm_multiply`.

    Examples
    --------
    Built by :func:`graph_diffusion`:

    >>> import networkx as nx
    >>> import numpy as np
    >>> G = graph_diffusion(nx.cycle_graph(5), 0.3)
    >>> isinstance(G, GraphDiffusion), G.shape, G.is_spectral, G.truncation_error
    (True, (5, 5), True, 0.0)
    >>> A = G.todense()
    >>> bool(np.allclose(A, A.T)), A.sum(axis=0).round(12).tolist()  # symmetric, conserves heat
    (True, [1.0, 1.0, 1.0, 1.0, 1.0])
    """

    def __init__(self, domain: GraphDomain, tau: float, *, dense_limit: int = 1000) -> None:
        super().__init__(shape=(domain.size, domain.size), domain=domain, sensor_positions=np.arange(domain.size))
        self.tau = tau
        self.graph_domain = domain
        self._laplacian = domain.laplacian()
        self.eigenvalues: NDArray[np.float64] | None = None
        self.eigenvectors: NDArray[np.float64] | None = None
        self.truncation_error = 0.0
        self._compute_spectrum(dense_limit)

    def _compute_spectrum(self, dense_limit: int) -> None:
        n = self.shape[0]
        if n > dense_limit and self._lanczos_spectrum():
            return
        if n <= max(dense_limit, DENSE_FALLBACK_LIMIT):
            w, U = np.linalg.eigh(self._laplacian.toarray())
            keep = np.exp(-self.tau * w) > SPECTRAL_TOLERANCE
            self.eigenvalues, self.eigenvectors = w[keep], U[:, keep]
            dropped = w[~keep]
            self.truncation_error = float(np.exp(-self.tau * dropped.min())) if dropped.size else 0.0
        # otherwise products stay matrix-free (expm_multiply)

    def _lanczos_spectrum(self) -> bool:
        """Smallest Laplacian eigenpairs by Lanczos, certified complete below the threshold."""
        n = self.shape[0]
        threshold = -math.log(SPECTRAL_TOLERANCE) / self.tau
        laplacian = self._laplacian.astype(float)
        k = 8
        while k <= min(n // 4, 64):
            try:
                w, U = spla.eigsh(laplacian, k=k, which="SA", tol=0.0)
            except spla.ArpackNoConvergence:
                return False
            order = np.argsort(w)
            w, U = w[order], U[:, order]
            if w[-1] > threshold:
                keep = w <= threshold
                if not self._nothing_missed(U[:, keep], threshold):
                    return False
                self.eigenvalues, self.eigenvectors = w[keep], U[:, keep]
                self.truncation_error = float(np.exp(-self.tau * w[~keep].min()))
                return True
            k *= 2
        return False

    def _nothing_missed(self, U: NDArray[np.float64], threshold: float) -> bool:
        """Certify that no eigenvalue below ``threshold`` is missing from ``U``.

        Lanczos can miss copies of a repeated eigenvalue; a missed eigenvector with weight above
        the tolerance would make column differences (and so Δ2) too small — a privacy bug. The
        found eigenvectors are shifted far up (deflation) and the smallest eigenvalue of what is
        left must exceed the threshold.
        """
        shift = 2.0 * threshold + 1.0
        laplacian = self._laplacian.astype(float)
        deflated = spla.LinearOperator(
            laplacian.shape, matvec=lambda x: laplacian @ x + shift * (U @ (U.T @ x)), dtype=float
        )
        try:
            smallest = spla.eigsh(deflated, k=1, which="SA", tol=1e-8, return_eigenvectors=False)[0]
        except spla.ArpackNoConvergence:
            return False
        return bool(smallest > threshold)

    @property
    def is_spectral(self) -> bool:
        """Whether products use the (truncated) eigendecomposition rather than ``expm_multiply``."""
        return self.eigenvectors is not None

    def _apply(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.eigenvectors is not None and self.eigenvalues is not None:
            U, lam = self.eigenvectors, np.exp(-self.tau * self.eigenvalues)
            coeff = U.T @ x
            return np.asarray(U @ (lam[:, None] * coeff if coeff.ndim == 2 else lam * coeff))
        return np.asarray(spla.expm_multiply(-self.tau * self._laplacian.astype(float), x))

    def _matvec(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._apply(x)

    def _rmatvec(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._apply(y)  # symmetric

    def matmat(self, x: Any) -> NDArray[np.float64]:
        return self._apply(check_array("X", x, shape=(self.shape[1], None)))

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        index = np.asarray(index)
        if self.eigenvectors is not None and self.eigenvalues is not None:
            lam = np.exp(-self.tau * self.eigenvalues)
            return np.asarray(self.eigenvectors @ (lam[:, None] * self.eigenvectors[index].T))
        return super().columns(index)

    def column_difference_norms(self, pairs: NDArray[np.intp], *, chunk: int = 65536) -> NDArray[np.float64]:
        """``‖A_i − A_j‖₂ = ‖Λ (U_i − U_j)‖₂`` from the spectral factors (exact to the truncation)."""
        if self.eigenvectors is None or self.eigenvalues is None:
            return super().column_difference_norms(pairs)
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        scaled = self.eigenvectors * np.exp(-self.tau * self.eigenvalues)[None, :]
        out = np.empty(len(pairs))
        for start in range(0, len(pairs), chunk):
            block = pairs[start : start + chunk]
            out[start : start + len(block)] = np.linalg.norm(scaled[block[:, 0]] - scaled[block[:, 1]], axis=1)
        return out

    def todense(self) -> NDArray[np.float64]:
        return self._apply(np.eye(self.shape[0]))

    def __repr__(self) -> str:
        return f"GraphDiffusion(n={self.shape[0]}, tau={self.tau:g})"


@overload
def graph_diffusion(
    graph: nx.Graph | GraphDomain, tau: float, *, dense_limit: int = ..., conductance: str = ..., sensors: None = ...
) -> GraphDiffusion: ...


@overload
def graph_diffusion(
    graph: nx.Graph | GraphDomain, tau: float, *, dense_limit: int = ..., conductance: str = ..., sensors: ArrayLike
) -> LocalGraphDiffusion: ...


def graph_diffusion(
    graph: nx.Graph | GraphDomain,
    tau: float,
    *,
    dense_limit: int = 1000,
    conductance: str = "conductance",
    sensors: ArrayLike | None = None,
) -> GraphDiffusion | LocalGraphDiffusion:
    """The graph diffusion model ``A_G = exp(−τ L)`` of thesis section 8.3.

    Parameters
    ----------
    graph : networkx.Graph or GraphDomain
        Connected undirected graph; the edge attribute named by ``conductance`` (default 1) gives
        ``W`` in ``L = D − W``. Edge lengths (attribute ``length``) do not enter the operator;
        they are the metric of the privacy relation (see :class:`~dpcloak.domains.GraphDomain`).
    tau : float
        Diffusion time, > 0, in the inverse unit of the conductances: dimensionless for unit
        conductances, m² for the ``1/d²`` conductances of :func:`~dpcloak.domains.proximity_graph`.
    dense_limit : int, default 1000
        Up to this many nodes the full spectrum comes from a dense ``eigh``; above it, from sparse
        Lanczos when the spectrum decays fast enough, else products are matrix-free.
    conductance : str, default "conductance"
        Edge attribute read as the conductance when ``graph`` is a networkx graph (e.g.
        ``"weight"`` for networkx's weighted example graphs); a GraphDomain keeps its own.
    sensors : array_like of int, optional
        Node indices (in the domain's node order) carrying a sensor; default every node. With
        sensors the model is the ``(m, n)`` block ``exp(−τL)[sensors, :]``, computed row by row
        where the heat actually spreads, with a certified truncation bound
        (:class:`~dpcloak.models.graph_local.LocalGraphDiffusion`): this is what scales to
        ``10⁴–10⁵`` nodes with a few thousand sensors. A model that would not fit in memory or
        time is refused with the estimate.

    Examples
    --------
    >>> import networkx as nx
    >>> model = graph_diffusion(nx.complete_graph(4), 0.5)
    >>> round(float(model.matvec([1.0, 0, 0, 0]).sum()), 12)  # heat is conserved
    1.0
    """
    domain = graph if isinstance(graph, GraphDomain) else GraphDomain(graph, conductance=conductance)
    domain.require_connected("graph diffusion")
    if domain.size < 2:
        raise InvalidParameterError(f"graph must have at least 2 nodes for diffusion, got {domain.size}",
                                    parameter="graph")
    tau = check_real("tau", tau, low=0.0)
    if sensors is not None:
        from dpcloak.models.graph_local import LocalGraphDiffusion

        return LocalGraphDiffusion(domain, tau, _sensor_nodes(sensors, domain.size))
    return GraphDiffusion(domain, tau, dense_limit=check_int("dense_limit", dense_limit, minimum=1))


def _sensor_nodes(sensors: ArrayLike, n: int) -> NDArray[np.intp]:
    """Validated distinct node indices ``0 ≤ s < n``, at least one."""
    raw = np.asarray(sensors)
    if raw.ndim != 1 or raw.size == 0 or not np.issubdtype(raw.dtype, np.integer):
        raise InvalidParameterError(f"sensors must be a non-empty 1-D array of node indices, got shape {raw.shape}",
                                    parameter="sensors")
    if raw.min() < 0 or raw.max() >= n:
        raise InvalidParameterError(f"sensors must be node indices in [0, {n}), got {raw.min()}..{raw.max()}",
                                    parameter="sensors")
    if np.unique(raw).size != raw.size:
        raise InvalidParameterError("sensors must be distinct node indices", parameter="sensors")
    return raw.astype(np.intp)
