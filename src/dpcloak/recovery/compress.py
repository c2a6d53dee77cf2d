"""Low-rank compression of a forward model, cached per sensor layout.

Diffusion operators are numerically low-rank: the 1-D heat kernel at ``n = 1000``, ``m = 500``,
``T = 0.5`` has 8 singular values above ``1e-13 s₁``. With a truncated SVD ``M ≈ U S Vᵀ`` of rank
``k`` the data-fit term of every recovery problem splits exactly into a ``k``-dimensional part and
a constant,

.. math::

    ‖U S Vᵀ f − y‖₂² = ‖S Vᵀ f − Uᵀ y‖₂² + ‖(I − U Uᵀ) y‖₂²,

so the solvers only ever touch the ``k × n`` matrix ``G = S Vᵀ``, the ``k``-vector ``z = Uᵀ y`` and
the scalar ``‖y_⊥‖₂``. The truncation is rigorous: :attr:`CompressedModel.error` bounds
``‖M − U S Vᵀ‖₂`` (exactly the first dropped singular value for factorised models, the Frobenius
norm of the computed remainder for dense ones, plus the certified interpolation error and a
rounding allowance for the 1-D heat kernel's Chebyshev factors), hence
``| ‖M f − y‖ − ‖U S Vᵀ f − y‖ | ≤ error · ‖f‖₂`` for every ``f``.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcloak._validation import check_real
from dpcloak.domains import Line
from dpcloak.errors import InvalidParameterError
from dpcloak.models import DenseModel, GraphDiffusion, HeatKernel1D, KroneckerHeatKernel2D, LinearModel
from dpcloak.models.base import by_support
from dpcloak.models.heat import gaussian_kernel_1d
from dpcloak.recovery._chebyshev import heat_kernel_factors

__all__ = [
    "CompressedModel", "DenseRows", "KroneckerRows", "ProjectedData", "compress", "clear_compression_cache"
]

#: Singular values below ``DEFAULT_RTOL · s₁`` are dropped.
DEFAULT_RTOL = 1e-13
_CACHE_SIZE = 16
_cache: OrderedDict[tuple[object, ...], CompressedModel] = OrderedDict()
_cache_lock = threading.Lock()
_by_model: weakref.WeakKeyDictionary[LinearModel, dict[float, CompressedModel]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ProjectedData:
    """Readings ``y`` in the compressed coordinates: ``z = Uᵀ y`` and ``‖(I − U Uᵀ) y‖₂``.

    Examples
    --------
    Returned by :meth:`CompressedModel.project`:

    >>> import numpy as np
    >>> from dpcloak.models import heat_kernel_1d
    >>> c = compress(heat_kernel_1d(40, 20, 0.05))
    >>> data = c.project(np.ones(20))
    >>> data.z.shape == (c.rank,), bool(data.outside_norm >= 0)
    (True, True)
    >>> bool(np.isclose(np.linalg.norm(data.z) ** 2 + data.outside_norm**2, 20.0))  # Pythagoras: ‖y‖² = 20
    True
    """

    z: NDArray[np.float64]
    outside_norm: float


@dataclass(frozen=True)
class DenseRows:
    """The compressed operator ``G`` (``k × n``) held as a dense array.

    The solvers use ``G`` only through this interface (``rank``, ``dot``, ``tdot``, ``columns``,
    ``column_norms``, ``weighted_gram``), which :class:`KroneckerRows` implements from its factors.

    Examples
    --------
    >>> import numpy as np
    >>> rows = DenseRows(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    >>> rows.rank, rows.dot(np.ones(3)).tolist(), rows.tdot(np.array([1.0, 1.0])).tolist()
    (2, [3.0, 3.0], [1.0, 3.0, 2.0])
    >>> rows.column_norms().tolist()
    [1.0, 3.0, 2.0]
    >>> rows.weighted_gram(np.ones(3)).tolist()  # G Gᵀ
    [[5.0, 0.0], [0.0, 9.0]]
    """

    G: NDArray[np.float64]

    @property
    def rank(self) -> int:
        return int(self.G.shape[0])

    def dot(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """``G x`` (from the columns of ``x``'s non-zeros when few: :func:`~dpcloak.models.base.by_support`)."""
        return by_support(x, self.columns, lambda: np.asarray(self.G @ x), rows=self.rank, cost=self.G.size)

    def tdot(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Gᵀ w``."""
        return np.asarray(self.G.T @ w)

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        """``G[:, index]``."""
        return np.asarray(self.G[:, index])

    def column_norms(self) -> NDArray[np.float64]:
        """``‖G_j‖₂`` for every column."""
        return np.sqrt(np.einsum("ij,ij->j", self.G, self.G))

    def weighted_gram(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        """``G diag(d) Gᵀ``."""
        return np.asarray((self.G * d) @ self.G.T)


@dataclass(frozen=True)
class KroneckerRows:
    """Rows ``G_r = s_r (a_{i_r} ⊗ b_{j_r})`` of a compressed Kronecker product ``K_y ⊗ K_x``.

    ``A`` (``p × n_y``) and ``B`` (``q × n_x``) hold the right singular vectors of the factors that
    occur; ``iy``/``ix`` index them per row. ``G diag(d) Gᵀ`` then costs
    ``O(p² n_y n_x + p² q² n_x)`` instead of ``O(k² n_y n_x)``.

    Examples
    --------
    A separable 2-D heat kernel compresses to Kronecker rows; products never form ``G``:

    >>> import numpy as np
    >>> from dpcloak.domains import Grid
    >>> from dpcloak.models import heat_kernel_2d
    >>> c = compress(heat_kernel_2d(Grid((8, 8)), Grid((4, 4)), 0.02))
    >>> rows = c.kron
    >>> isinstance(rows, KroneckerRows), rows.dense().shape == (c.rank, 64)
    (True, True)
    >>> x = np.random.default_rng(0).random(64)
    >>> bool(np.allclose(rows.dot(x), rows.dense() @ x))
    True
    >>> bool(np.allclose(rows.weighted_gram(x), (rows.dense() * x) @ rows.dense().T))
    True
    """

    A: NDArray[np.float64]
    B: NDArray[np.float64]
    iy: NDArray[np.intp]
    ix: NDArray[np.intp]
    s: NDArray[np.float64]

    @property
    def rank(self) -> int:
        return int(self.s.size)

    def dense(self) -> NDArray[np.float64]:
        """``G`` as a ``k × n_y n_x`` array."""
        G = (self.A[self.iy][:, :, None] * self.B[self.ix][:, None, :]).reshape(self.s.size, -1)
        return np.asarray(self.s[:, None] * G)

    def dot(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """``G x = s_r (A X Bᵀ)[i_r, j_r]`` with ``X = x`` as an ``n_y × n_x`` image: ``O((p + q) n)``, or from the
        columns of ``x``'s non-zeros when they are few (:func:`~dpcloak.models.base.by_support`)."""

        def full() -> NDArray[np.float64]:
            P = self.A @ x.reshape(self.A.shape[1], self.B.shape[1]) @ self.B.T
            return np.asarray(self.s * P[self.iy, self.ix])

        return by_support(x, self.columns, full, rows=self.rank, cost=self.A.shape[0] * x.size)

    def tdot(self, w: NDArray[np.float64]) -> NDArray[np.float64]:
        """``Gᵀ w = vec(Aᵀ W B)`` with ``W[i_r, j_r] = s_r w_r`` (each pair occurs once)."""
        W = np.zeros((self.A.shape[0], self.B.shape[0]))
        W[self.iy, self.ix] = self.s * w
        return np.asarray((self.A.T @ W @ self.B).ravel())

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        """``G[:, index]`` from the factors, without forming ``G``."""
        ys, xs = np.divmod(np.asarray(index), self.B.shape[1])
        return np.asarray(self.s[:, None] * self.A[:, ys][self.iy] * self.B[:, xs][self.ix])

    def column_norms(self) -> NDArray[np.float64]:
        """``‖G_j‖₂² = Σ_r s_r² a_{i_r}(y)² b_{j_r}(x)² = vec((A∘A)ᵀ S² (B∘B))``, without forming ``G``."""
        S2 = np.zeros((self.A.shape[0], self.B.shape[0]))
        S2[self.iy, self.ix] = self.s**2
        return np.sqrt(((self.A * self.A).T @ S2 @ (self.B * self.B)).ravel())

    def weighted_gram(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        p, ny = self.A.shape
        q, nx = self.B.shape
        D = d.reshape(ny, nx)
        E = (self.A[:, None, :] * self.A[None, :, :]).reshape(p * p, ny) @ D  # Σ_y a_i a_i' D(y, x)
        F = E @ (self.B[:, None, :] * self.B[None, :, :]).reshape(q * q, nx).T  # Σ_x … b_j b_j'
        F4 = F.reshape(p, p, q, q)
        out = F4[self.iy[:, None], self.iy[None, :], self.ix[:, None], self.ix[None, :]]
        return np.asarray(out * np.outer(self.s, self.s))


@dataclass(frozen=True)
class CompressedModel:
    """A rank-``k`` factorisation ``M ≈ U S Vᵀ`` stored as ``U`` (m × k) and ``G = S Vᵀ`` (k × n).

    Attributes
    ----------
    U : ndarray, shape (m, k)
        Orthonormal left singular vectors.
    rows : DenseRows or KroneckerRows
        ``G = diag(s) Vᵀ``, the compressed operator (``k × n``): dense, or from the factors of a
        Kronecker product (products in ``O((p + q) n)``, never formed); :attr:`G` gives the array.
    singular_values : ndarray, shape (k,)
        The kept singular values, descending.
    error : float
        A bound on ``‖M − U G‖₂`` (spectral norm of what was dropped).

    Examples
    --------
    Returned by :func:`compress`:

    >>> from dpcloak.models import heat_kernel_1d
    >>> c = compress(heat_kernel_1d(40, 20, 0.05))
    >>> isinstance(c, CompressedModel), c.U.shape[1] == c.rank == len(c.singular_values), c.G.shape[1]
    (True, True, 40)

    >>> import numpy as np
    >>> A = heat_kernel_1d(40, 20, 0.05)
    >>> c = compress(A)
    >>> data = c.project(A.matvec(np.ones(40)))  # readings of the model lie in the range of U
    >>> data.z.shape, bool(data.outside_norm < 1e-10)
    ((16,), True)
    >>> bool(np.allclose(c.weighted_gram(np.ones(40)), c.G @ c.G.T))
    True
    """

    U: NDArray[np.float64]
    rows: DenseRows | KroneckerRows
    singular_values: NDArray[np.float64]
    error: float

    @property
    def G(self) -> NDArray[np.float64]:
        """``diag(s) Vᵀ`` as a dense ``k × n`` array (formed on demand for Kronecker rows)."""
        if isinstance(self.rows, DenseRows):
            return self.rows.G
        return self.rows.dense()

    @property
    def kron(self) -> KroneckerRows | None:
        """The Kronecker factors of ``G``, when the model is a Kronecker product."""
        return self.rows if isinstance(self.rows, KroneckerRows) else None

    @property
    def rank(self) -> int:
        """Number of kept singular triplets ``k``."""
        return self.rows.rank

    def weighted_gram(self, d: NDArray[np.float64]) -> NDArray[np.float64]:
        """``G diag(d) Gᵀ`` (``k × k``), exploiting Kronecker rows when present."""
        return self.rows.weighted_gram(d)

    def project(self, y: NDArray[np.float64]) -> ProjectedData:
        """``z = Uᵀ y`` and the norm of the part of ``y`` outside the range of ``U``."""
        z = self.U.T @ y
        outside = float(np.linalg.norm(y - self.U @ z))
        return ProjectedData(z=np.asarray(z), outside_norm=outside)


def _digest(*arrays: NDArray[np.float64]) -> str:
    h = hashlib.blake2b(digest_size=20)
    for arr in arrays:
        a = np.ascontiguousarray(arr, dtype=float)
        h.update(str(a.shape).encode())
        h.update(a.data)  # the buffer itself: no copy of the operator
    return h.hexdigest()


def _truncate(s: NDArray[np.float64], rtol: float) -> int:
    if s.size == 0 or s[0] == 0.0:
        return 0
    return max(1, int(np.count_nonzero(s > rtol * s[0])))


def _dense_svd(A: NDArray[np.float64], rtol: float) -> CompressedModel:
    """Truncated SVD of a dense matrix: randomized range finder with an exact remainder check.

    ``Q`` is an orthonormal basis of ``A Ω`` (Gaussian ``Ω`` with ``l`` columns, fixed seed so the
    cache is deterministic); the remainder ``A − Q Qᵀ A`` is formed explicitly and its Frobenius
    norm (≥ its spectral norm) is part of :attr:`CompressedModel.error`. ``l`` doubles until that
    remainder is below ``rtol · s₁``; past a quarter of ``min(m, n)`` a full SVD is cheaper.
    """
    m, n = A.shape
    small = min(m, n)
    rng = np.random.default_rng(0)
    width = 32
    while 4 * width <= small:
        Y = A @ rng.standard_normal((n, width))
        Q, _ = np.linalg.qr(Y)
        B = Q.T @ A
        remainder = float(np.linalg.norm(A - Q @ B))
        Ub, s, Vt = np.linalg.svd(B, full_matrices=False)
        k = _truncate(s, rtol)
        if k < width - 4 and remainder <= rtol * s[0]:
            error = remainder + (float(s[k]) if k < s.size else 0.0)
            return CompressedModel(U=Q @ Ub[:, :k], rows=DenseRows(s[:k, None] * Vt[:k]), singular_values=s[:k],
                                   error=error)
        width *= 2
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    k = _truncate(s, rtol)
    error = float(s[k]) if k < s.size else 0.0
    return CompressedModel(U=U[:, :k], rows=DenseRows(s[:k, None] * Vt[:k]), singular_values=s[:k], error=error)


def _factored_svd(C: NDArray[np.float64], L: NDArray[np.float64], extra: float, rtol: float) -> CompressedModel:
    """Truncated SVD of ``C L`` (``m × p`` times ``p × n``, ``p`` small) in ``O((m + n) p²)``.

    ``C = Q_c R_c`` and ``Lᵀ = Q_l R_l`` give ``C L = Q_c (R_c R_lᵀ) Q_lᵀ``; the SVD of the
    ``p × p`` middle factor is the SVD of ``C L``. ``extra`` bounds ``‖M − C L‖₂`` and is added to the
    dropped singular value in :attr:`CompressedModel.error`.
    """
    Qc, Rc = np.linalg.qr(C)
    Ql, Rl = np.linalg.qr(L.T)
    Ub, s, Vbt = np.linalg.svd(Rc @ Rl.T)
    k = _truncate(s, rtol)
    error = extra + (float(s[k]) if k < s.size else 0.0)
    return CompressedModel(U=Qc @ Ub[:, :k], rows=DenseRows(s[:k, None] * (Vbt[:k] @ Ql.T)), singular_values=s[:k],
                           error=error)


def _heat1d_svd(model: HeatKernel1D, rtol: float) -> CompressedModel | None:
    """The 1-D heat kernel from its Chebyshev factors (:mod:`dpcloak.recovery._chebyshev`), or
    ``None`` when interpolation would need more than a quarter of ``min(m, n)`` nodes.

    The factor error is kept below ``0.1 · rtol · ‖A e_c‖₂`` for a middle column ``c`` (a lower
    bound on ``s₁``), i.e. far below the truncation level.
    """
    m, n = model.shape
    sensors = np.asarray(model.sensor_positions, dtype=float)
    domain = model.domain
    if not isinstance(domain, Line):
        return None
    sources = domain.points()
    s1_low = float(np.linalg.norm(gaussian_kernel_1d(sensors - sources[n // 2], model.T)))
    factors = heat_kernel_factors(sensors, sources, model.T, target=0.1 * rtol * s1_low,
                                  max_nodes=max(1, min(m, n) // 4))
    if factors is None:
        return None
    return _factored_svd(factors.C, factors.L, factors.error, rtol)


def _kronecker_svd(ky: NDArray[np.float64], kx: NDArray[np.float64], rtol: float) -> CompressedModel:
    """SVD of ``K_y ⊗ K_x`` from the SVDs of the factors: singular values ``s_i t_j``, vectors ``u_i ⊗ v_j``."""
    Uy, sy, Vyt = np.linalg.svd(ky, full_matrices=False)
    Ux, sx, Vxt = np.linalg.svd(kx, full_matrices=False)
    prod = np.outer(sy, sx)
    order = np.argsort(prod, axis=None)[::-1]
    s_all = prod.ravel()[order]
    k = _truncate(s_all, rtol)
    iy, ix = np.unravel_index(order[:k], prod.shape)
    s = s_all[:k]
    U = (Uy[:, iy][:, None, :] * Ux[:, ix][None, :, :]).reshape(ky.shape[0] * kx.shape[0], k)
    error = float(s_all[k]) if k < s_all.size else 0.0
    uy, ry = np.unique(iy, return_inverse=True)
    ux, rx = np.unique(ix, return_inverse=True)
    rows = KroneckerRows(A=Vyt[uy], B=Vxt[ux], iy=ry, ix=rx, s=s)
    return CompressedModel(U=U, rows=rows, singular_values=s, error=error)


def _graph_svd(model: GraphDiffusion, rtol: float) -> CompressedModel:
    """``exp(−τL) = W diag(e^{−τw}) Wᵀ`` is symmetric positive definite: its SVD is its eigendecomposition."""
    assert model.eigenvalues is not None and model.eigenvectors is not None  # checked by the caller
    s = np.exp(-model.tau * model.eigenvalues)
    order = np.argsort(s)[::-1]
    s, W = s[order], model.eigenvectors[:, order]
    k = _truncate(s, rtol)
    error = model.truncation_error + (float(s[k]) if k < s.size else 0.0)
    return CompressedModel(U=W[:, :k], rows=DenseRows(s[:k, None] * W[:, :k].T), singular_values=s[:k], error=error)


def compress(model: LinearModel, *, rtol: float = DEFAULT_RTOL) -> CompressedModel:
    """Truncated SVD of a forward model, cached per sensor layout.

    Parameters
    ----------
    model : LinearModel
        :class:`~dpcloak.models.HeatKernel1D` is compressed from Chebyshev factors of its kernel
        without reading the matrix (:mod:`dpcloak.recovery._chebyshev`; the dense path below when
        more than ``min(m, n)/4`` nodes would be needed); other dense models use a randomized range
        finder with an exact remainder check (full SVD when the numerical rank is not small);
        :class:`~dpcloak.models.KroneckerHeatKernel2D` is compressed per factor and keeps its rows
        factored (:class:`KroneckerRows`); :class:`~dpcloak.models.GraphDiffusion` reuses its
        eigendecomposition; any other model is densified once.
    rtol : float, default 1e-13
        Singular values ``≤ rtol · s₁`` are dropped, in (0, 1).

    Notes
    -----
    Models are treated as immutable: a model object seen before is answered without re-hashing
    its operator.

    Returns
    -------
    CompressedModel
        With ``error ≥ ‖M − U G‖₂``. Results are cached: by model object, and across objects by the
        parameters ``(n, m, T)`` of a 1-D heat kernel or the bytes of any other operator (hashed in
        place), so two equal models built separately share one entry (a sweep over noise draws or ε).

    Examples
    --------
    >>> from dpcloak.models import heat_kernel_1d
    >>> A = heat_kernel_1d(40, 20, 0.05)
    >>> c = compress(A)
    >>> c.rank < 20, bool(c.error < 1e-10)  # heat kernels are numerically low-rank
    (True, True)
    >>> bool(np.linalg.norm(A.todense() - c.U @ c.G, 2) <= c.error + 1e-12)  # the error bound holds
    True
    >>> compress(A) is c  # cached
    True
    """
    if not isinstance(model, LinearModel):
        raise InvalidParameterError(f"model must be a dpcloak LinearModel, got {type(model).__name__}",
                                    parameter="model")
    rtol = check_real("rtol", rtol, low=0.0, high=1.0)
    with _cache_lock:
        known = _by_model.get(model, {}).get(rtol)
    if known is not None:  # the same model object again: no need to hash its operator
        return known
    if isinstance(model, HeatKernel1D):  # determined by its parameters: no need to read the matrix
        key: tuple[object, ...] = ("heat1d", rtol, model.n, model.m, model.T)
    elif isinstance(model, KroneckerHeatKernel2D):
        key = ("kron", rtol, _digest(*model.factors))
    elif isinstance(model, GraphDiffusion) and model.eigenvectors is not None:
        key = ("graph", rtol, _digest(model.eigenvalues, model.eigenvectors))  # type: ignore[arg-type]
    else:
        dense = model.matrix if isinstance(model, DenseModel) else model.todense()
        key = ("dense", rtol, _digest(dense))
    result: CompressedModel | None = None
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            _by_model.setdefault(model, {})[rtol] = hit
            return hit
    if isinstance(model, HeatKernel1D):
        result = _heat1d_svd(model, rtol)
        if result is None:
            result = _dense_svd(model.todense(), rtol)
    elif key[0] == "kron":
        assert isinstance(model, KroneckerHeatKernel2D)
        result = _kronecker_svd(*model.factors, rtol)
    elif key[0] == "graph":
        assert isinstance(model, GraphDiffusion)
        result = _graph_svd(model, rtol)
    else:
        result = _dense_svd(dense, rtol)
    for arr in (result.U, result.singular_values, *([result.rows.G] if isinstance(result.rows, DenseRows) else [])):
        arr.setflags(write=False)
    with _cache_lock:
        _cache[key] = result
        _by_model.setdefault(model, {})[rtol] = result
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def clear_compression_cache() -> None:
    """Forget every cached compression (e.g. to time a cold start).

    Examples
    --------
    >>> from dpcloak.models import heat_kernel_1d
    >>> A = heat_kernel_1d(40, 20, 0.05)
    >>> c = compress(A)
    >>> clear_compression_cache()
    >>> compress(A) is c  # recomputed
    False
    """
    with _cache_lock:
        _cache.clear()
        _by_model.clear()

