"""Heat-kernel forward models: Gilbert & McMillan section 2.1 (1-D) and its 2-D floor-plan analogue."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_choice, check_int, check_memory, check_real
from dpcloak.domains.grid import Grid
from dpcloak.domains.line import Line
from dpcloak.domains.sites import Sites
from dpcloak.errors import InvalidParameterError
from dpcloak.models.base import DenseModel, LinearModel, by_support

__all__ = [
    "HeatKernel1D",
    "HeatKernel2D",
    "KroneckerHeatKernel2D",
    "heat_kernel_1d",
    "heat_kernel_2d",
    "gaussian_kernel_1d",
]


def gaussian_kernel_1d(diff: NDArray[np.float64], T: float) -> NDArray[np.float64]:
    """The 1-D heat kernel ``g(x) = exp(−x²/(4T)) / √(4πT)`` (Gilbert & McMillan, section 2.1).

    Examples
    --------
    >>> import numpy as np
    >>> g = gaussian_kernel_1d(np.array([0.0, 0.1]), T=0.01)
    >>> np.round(g, 4).tolist()
    [2.8209, 2.197]
    >>> bool(np.isclose(g[0], 1 / np.sqrt(4 * np.pi * 0.01)))  # the peak is 1/√(4πT)
    True
    """
    out = np.square(diff, dtype=np.float64)  # in-place steps below: one temporary for large kernels
    out *= -1.0 / (4.0 * T)
    np.exp(out, out=out)
    out *= 1.0 / math.sqrt(4.0 * math.pi * T)
    return out


def _reflecting_kernel_1d(
    x: NDArray[np.float64], y: NDArray[np.float64], T: float, length: float
) -> NDArray[np.float64]:
    """Neumann heat kernel on ``[0, length]`` by the method of images.

    ``g_N(x, y) = Σ_k g(x − y + 2kL) + g(x + y + 2kL)``; images are added until the next one is
    below ``exp(−40)`` of the peak, so the truncation error is far under double precision.
    """
    reach = math.sqrt(160.0 * T)
    images = math.ceil((length + reach) / (2.0 * length)) + 1
    out = np.zeros(np.broadcast_shapes(x.shape, y.shape))
    for k in range(-images, images + 1):
        shift = 2.0 * k * length
        out += gaussian_kernel_1d(x - y + shift, T) + gaussian_kernel_1d(x + y + shift, T)
    return out


def _axis_kernel(
    sensors: NDArray[np.float64], sources: NDArray[np.float64], T: float, length: float, walls: str | None
) -> NDArray[np.float64]:
    diff_x, diff_y = sensors[:, None], sources[None, :]
    if walls == "reflecting":
        return _reflecting_kernel_1d(diff_x, diff_y, T, length)
    return gaussian_kernel_1d(diff_x - diff_y, T)


#: The Toeplitz (FFT) path is used when the common grid of sources and sensors, ``lcm(n, m)`` points,
#: has at most ``m n / 16`` points and the matrix would have at least ``_FFT_ENTRIES`` entries; otherwise
#: (small models, or e.g. coprime ``n`` and ``m``) the matrix is stored.
_GRID_FRACTION = 16
_FFT_ENTRIES = 1 << 16
#: Peak bytes per FFT point of building the operator and its Δ2 (about twelve float64 arrays of the FFT's size,
#: measured at n = 4·10⁶: 768 MB for 8·10⁶ points).
_FFT_BYTES_PER_POINT = 12 * 8
#: Terms with ``d² / (4T) > 800`` underflow to exactly 0 in ``exp(−d²/(4T))`` (doubles stop near ``e^−745``).
_UNDERFLOW = 800.0
_EPS = float(np.finfo(float).eps)


def _fft_size(length: int) -> int:
    """The smallest ``2^a 3^b 5^c ≥ length`` (fast sizes for the FFT)."""
    best, p5 = 1 << max(0, (length - 1).bit_length()), 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            p = p35
            while p < length:
                p *= 2
            best = min(best, p)
            p35 *= 3
        p5 *= 5
    return best


def _step_difference(d: NDArray[np.int64], a: int, T: float, grid: int) -> NDArray[np.float64]:
    """``g(d/L) − g((d + a)/L)`` up to sign, without cancellation: the larger term times ``−expm1(·)``.

    For ``2d + a > 0`` it is ``g(d/L) (1 − e^{−a(2d + a)/(4T L²)})``, else ``g((d + a)/L)`` times the
    mirrored factor; both exponents are ≤ 0, so nothing overflows.
    """
    near = np.where(2 * d + a > 0, d, d + a)
    scale = a * np.abs(2 * d + a).astype(float) / (4.0 * T * float(grid) ** 2)
    out = gaussian_kernel_1d(near / float(grid), T)
    out *= -np.expm1(-scale)
    return out


class HeatKernel1D(LinearModel):
    """The 1-D heat-kernel matrix of Gilbert & McMillan: ``A[j, i] = g(i/n − j/m)`` with ``T = μ t``.

    Matrix-free when sources and sensors share a fine common grid: with ``L = lcm(n, m)``, source
    ``i`` sits at grid point ``i m/gcd`` and sensor ``j`` at ``j n/gcd`` of the grid of step ``1/L``,
    so ``A`` is a row/column selection of the symmetric Toeplitz matrix ``g((p − q)/L)``, applied by
    circulant embedding and the FFT in ``O(L log L)`` time and ``O(L)`` memory; the ``m × n`` matrix is
    never formed (building costs one FFT of the kernel). Small models (fewer than ``2¹⁶`` entries) and
    those with ``L > m n / 16`` (e.g. coprime ``n`` and ``m``) store the dense matrix instead.

    Examples
    --------
    Built by :func:`heat_kernel_1d`:

    >>> import numpy as np
    >>> A = heat_kernel_1d(8, 4, 0.01)
    >>> isinstance(A, HeatKernel1D), A.shape, A.domain
    (True, (4, 8), Line(n=8))
    >>> A.sensor_positions.tolist()  # j/m
    [0.25, 0.5, 0.75, 1.0]
    >>> bool(np.allclose(A.matvec(np.eye(8)[2]), A.todense()[:, 2]))
    True

    At ``n = 20 000`` sources and ``m = 10 000`` sensors the operator holds ``O(n)`` numbers, not ``2·10⁸``:

    >>> big = heat_kernel_1d(20_000, 10_000, 0.1)
    >>> big.matrix_free, big.matvec(np.ones(20_000)).shape
    (True, (10000,))
    """

    def __init__(self, *, n: int, m: int, t: float, mu: float) -> None:
        self.n, self.m, self.t, self.mu = n, m, t, mu
        self.T = mu * t
        common = math.gcd(n, m)
        self._grid = n // common * m  # L = lcm(n, m)
        fft = m * n >= _FFT_ENTRIES and _GRID_FRACTION * self._grid <= m * n
        if fft:  # before any array of the model's size exists
            check_memory(f"the {m}x{n} heat kernel's FFT arrays (m={m} sensors, n={n} sources)",
                         _FFT_BYTES_PER_POINT * _fft_size(2 * self._grid - 1) + 8 * (m + n),
                         hint="use fewer sources or sensors")
        domain = self._line = Line(n)
        sensors = np.arange(1, m + 1, dtype=float) / m
        super().__init__(shape=(m, n), domain=domain, sensor_positions=sensors)
        self._a, self._b = m // common, n // common  # source i at grid point i·a, sensor j at j·b (step 1/L)
        self._dense: DenseModel | None = None
        self._spectrum: NDArray[np.complex128] | None = None
        self._size = 0
        if fft:
            self._size = _fft_size(2 * self._grid - 1)  # no wrap-around for offsets in (−L, L)
            kernel = gaussian_kernel_1d(np.arange(self._grid, dtype=float) / self._grid, self.T)
            self._spectrum = np.fft.rfft(self._circulant(kernel))
        else:
            self._dense = DenseModel(self._dense_matrix(), domain=domain, sensor_positions=sensors)

    @property
    def matrix_free(self) -> bool:
        """Whether the operator is applied by the FFT (``True``) or holds the dense matrix."""
        return self._dense is None

    def _circulant(self, kernel: NDArray[np.float64], negative: NDArray[np.float64] | None = None
                   ) -> NDArray[np.float64]:
        """First column of the circulant: ``kernel[d]`` at ``d ≥ 0``, ``negative[d]`` (default ``kernel``) at ``−d``."""
        col = np.zeros(self._size)
        col[: self._grid] = kernel
        back = kernel if negative is None else negative
        col[self._size - self._grid + 1 :] = back[1:][::-1]
        return col

    def _convolve(self, values: NDArray[np.float64], step_in: int, count_in: int, step_out: int, count_out: int,
                  spectrum: NDArray[np.complex128]) -> NDArray[np.float64]:
        """Place ``values`` at grid points ``k·step_in`` (``k = 1..count_in``), convolve, read ``k·step_out``."""
        u = np.zeros((*values.shape[:-1], self._size))
        u[..., step_in - 1 : step_in * count_in : step_in] = values
        w = np.fft.irfft(np.fft.rfft(u) * spectrum, self._size)
        return np.ascontiguousarray(w[..., step_out - 1 : step_out * count_out : step_out])

    def _dense_matrix(self) -> NDArray[np.float64]:
        m, n = self.shape
        check_memory(f"the dense {m}x{n} heat kernel (m={m} sensors, n={n} sources)", 3 * 8 * m * n,
                     hint="use fewer sources or sensors")  # the matrix and two temporaries of its size
        return gaussian_kernel_1d(np.asarray(self.sensor_positions)[:, None] - self._line.points()[None, :], self.T)

    def _matvec(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        if self._dense is not None:
            return self._dense.matvec(x)
        assert self._spectrum is not None
        return self._convolve(x, self._a, self.n, self._b, self.m, self._spectrum)

    def _rmatvec(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        if self._dense is not None:
            return self._dense.rmatvec(y)
        assert self._spectrum is not None
        return self._convolve(y, self._b, self.m, self._a, self.n, self._spectrum)  # g is even: Aᵀ is the same kernel

    def matmat(self, x: ArrayLike) -> NDArray[np.float64]:
        if self._dense is not None:
            return self._dense.matmat(x)
        assert self._spectrum is not None
        arr = check_array("X", x, shape=(self.n, None))
        return np.asarray(self._convolve(arr.T, self._a, self.n, self._b, self.m, self._spectrum).T)

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        """Columns ``A[:, index]`` evaluated directly (the same numbers as the dense matrix)."""
        if self._dense is not None:
            return self._dense.columns(index)
        points = self._line.points()[np.asarray(index)]
        return gaussian_kernel_1d(np.asarray(self.sensor_positions)[:, None] - points[None, :], self.T)

    def column_difference_norms(self, pairs: NDArray[np.intp], *, chunk: int = 4096) -> NDArray[np.float64]:
        """``‖A_i − A_j‖₂`` per pair; adjacent pairs ``(i, i+1)`` of the whole line in ``O(L log L)``.

        For the run of all adjacent pairs, ``‖A_i − A_{i+1}‖₂² = Σ_q E(p_i − q)`` over the sensors' grid
        points ``q``, with ``E(d) = (g(d/L) − g((d + a)/L))²`` evaluated without cancellation
        (``_step_difference``): a convolution, computed by the FFT. Its rounding error is at most
        ``β = 64 ε log₂N · max(‖s‖₂‖E‖₁, ‖s‖₁‖E‖₂)`` per entry (``s`` the sensors' indicator; Higham,
        *Accuracy and Stability of Numerical Algorithms*, Thm 24.2, applied to the three transforms,
        with a factor 2 to spare), so every pair within ``2β`` of the largest is recomputed directly
        from its sensors: the maximum (Δ2) is exact, the other entries' squares carry at most ``β``.
        """
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        if self._dense is not None:
            return self._dense.column_difference_norms(pairs, chunk=chunk)
        n = self.n
        if not (len(pairs) == n - 1 and np.array_equal(pairs[:, 0], np.arange(n - 1))
                and np.array_equal(pairs[:, 1], pairs[:, 0] + 1)):
            return super().column_difference_norms(pairs, chunk=chunk)
        L, a, b = self._grid, self._a, self._b
        offsets = np.arange(L, dtype=np.int64)
        ahead, behind = _step_difference(offsets, a, self.T, L) ** 2, _step_difference(-offsets, a, self.T, L) ** 2
        spectrum = np.fft.rfft(self._circulant(ahead, behind))
        sums = self._convolve(np.ones(self.m), b, self.m, a, n - 1, spectrum)  # Σ_q E(p_i − q), i = 1..n−1
        log_n = math.log2(self._size)
        e_one = float(np.sum(ahead) + np.sum(behind[1:]))
        e_two = float(np.sqrt(np.sum(ahead**2) + np.sum(behind[1:] ** 2)))
        beta = 64.0 * _EPS * log_n * max(math.sqrt(self.m) * e_one, self.m * e_two)
        top = np.flatnonzero(sums >= float(np.max(sums)) - 2.0 * beta)
        sums = np.maximum(sums, 0.0)
        sums[top] = self._direct_difference_sums(top)
        return np.sqrt(sums)

    def _direct_difference_sums(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        """``Σ_q E(p_i − q)`` for pairs ``(i, i+1)``, ``i`` in ``index`` (0-based), over the sensors where
        ``E`` does not underflow to 0 (the others contribute exactly 0)."""
        L, a, b = self._grid, self._a, self._b
        reach = min(L, math.ceil(L * math.sqrt(4.0 * _UNDERFLOW * self.T)) + a)
        width = min(self.m, 2 * (reach // b) + 3)
        p = (index.astype(np.int64) + 1) * a
        first = np.clip((p - reach) // b, 1, max(1, self.m - width + 1))
        out = np.empty(len(index))
        rows = max(1, (1 << 20) // width)
        for start in range(0, len(index), rows):
            j = first[start : start + rows, None] + np.arange(width, dtype=np.int64)[None, :]
            terms = _step_difference(p[start : start + rows, None] - j * b, a, self.T, L) ** 2
            out[start : start + rows] = np.sum(terms, axis=1)
        return out

    def todense(self) -> NDArray[np.float64]:
        if self._dense is not None:
            return self._dense.todense()
        return self._dense_matrix()

    def __repr__(self) -> str:
        return f"HeatKernel1D(n={self.n}, m={self.m}, t={self.t:g}, mu={self.mu:g})"


def heat_kernel_1d(n: int, m: int, t: float, *, mu: float = 0.5) -> HeatKernel1D:
    """The paper's 1-D heat-diffusion matrix (Gilbert & McMillan, section 2.1).

    Sources sit at ``i/n`` (``i = 1..n``), sensors at ``j/m`` (``j = 1..m``) and the readings are
    ``y = A f`` with ``A[j, i] = g(i/n − j/m)``, ``g(x) = exp(−x²/(4T))/√(4πT)``, ``T = μ t``
    (heat equation on the whole real line, no boundary). The operator is matrix-free (Toeplitz,
    applied by the FFT) when ``lcm(n, m) ≤ m n / 16`` and ``m n ≥ 2¹⁶``, as for ``m = n/2`` with even
    ``n ≥ 364``; see :class:`HeatKernel1D`.

    Parameters
    ----------
    n, m : int
        Number of source locations and sensors, both ≥ 1.
    t : float
        Time lapse before measuring, > 0.
    mu : float, default 0.5
        Diffusion constant, > 0 (the papers' experiments use 1/2).

    Examples
    --------
    >>> A = heat_kernel_1d(100, 50, 0.1)
    >>> A.shape
    (50, 100)
    """
    n, m = check_int("n", n, minimum=1), check_int("m", m, minimum=1)
    return HeatKernel1D(
        n=n,
        m=m,
        t=check_real("t", t, low=0.0),
        mu=check_real("mu", mu, low=0.0),
    )


class HeatKernel2D(DenseModel):
    """2-D heat kernel from sources on a :class:`Grid` or at :class:`Sites` to sensors at arbitrary positions.

    Examples
    --------
    Built by :func:`heat_kernel_2d` from sensor positions:

    >>> from dpcloak.domains import Grid
    >>> H = heat_kernel_2d(Grid((4, 4)), [[0.5, 0.5], [0.1, 0.9]], 0.01)
    >>> isinstance(H, HeatKernel2D), H.shape
    (True, (2, 16))
    >>> H.sensor_positions.tolist()
    [[0.5, 0.5], [0.1, 0.9]]
    """

    def __init__(
        self,
        matrix: NDArray[np.float64],
        *,
        domain: Grid | Sites,
        sensors: NDArray[np.float64],
        t: float,
        mu: float,
        walls: str | None,
    ) -> None:
        self.t, self.mu, self.T, self.walls = t, mu, mu * t, walls
        super().__init__(matrix, domain=domain, sensor_positions=sensors)


def _factor_difference_norms(factor: NDArray[np.float64], pairs: NDArray[np.int64]) -> NDArray[np.float64]:
    """``‖factor[:, i] − factor[:, j]‖₂`` for each row ``(i, j)`` of ``pairs``, each distinct pair computed once."""
    if len(pairs) == 0:
        return np.zeros(0)
    width = factor.shape[1]
    distinct, inverse = np.unique(pairs[:, 0] * width + pairs[:, 1], return_inverse=True)
    first, second = np.divmod(distinct, width)
    norms = np.linalg.norm(factor[:, first] - factor[:, second], axis=0)
    return np.asarray(norms[inverse.ravel()])


class KroneckerHeatKernel2D(LinearModel):
    """2-D heat kernel with sensors on a grid: ``M = K_y ⊗ K_x`` (never formed unless asked).

    With sources on a ``(ry, rx)`` grid and sensors on a ``(sy, sx)`` grid, the separable kernel
    ``g(dy) g(dx)`` gives ``M f = vec(K_y F K_xᵀ)`` for ``F = f.reshape(ry, rx)``.

    Examples
    --------
    Built by :func:`heat_kernel_2d` when the sensors are a :class:`Grid`:

    >>> import numpy as np
    >>> from dpcloak.domains import Grid
    >>> K = heat_kernel_2d(Grid((4, 4)), Grid((2, 2)), 0.01)
    >>> isinstance(K, KroneckerHeatKernel2D), K.shape
    (True, (4, 16))
    >>> ky, kx = K.factors
    >>> ky.shape, kx.shape
    ((2, 4), (2, 4))
    >>> bool(np.allclose(K.todense(), np.kron(ky, kx)))
    True
    """

    def __init__(
        self,
        *,
        grid: Grid,
        sensor_grid: Grid,
        ky: NDArray[np.float64],
        kx: NDArray[np.float64],
        t: float,
        mu: float,
        walls: str | None,
    ) -> None:
        self.t, self.mu, self.T, self.walls = t, mu, mu * t, walls
        self.sensor_grid = sensor_grid
        self.ky, self.kx = ky, kx
        super().__init__(shape=(sensor_grid.size, grid.size), domain=grid, sensor_positions=sensor_grid.coordinates())

    @property
    def factors(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(K_y, K_x)`` with ``M = kron(K_y, K_x)``."""
        return self.ky, self.kx

    def _matvec(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """``vec(K_y F K_xᵀ)``, or from the columns of a sparse map's sources (:func:`.by_support`)."""

        def full() -> NDArray[np.float64]:
            F = x.reshape(self.ky.shape[1], self.kx.shape[1])
            return np.asarray((self.ky @ F @ self.kx.T).ravel())

        return by_support(x, self.columns, full, rows=self.shape[0], cost=self.ky.shape[0] * x.size)

    def _rmatvec(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        Y = y.reshape(self.ky.shape[0], self.kx.shape[0])
        return np.asarray((self.ky.T @ Y @ self.kx).ravel())

    def matmat(self, x: ArrayLike) -> NDArray[np.float64]:
        arr = check_array("X", x, shape=(self.shape[1], None))
        k = arr.shape[1]
        blocks = arr.T.reshape(k, self.ky.shape[1], self.kx.shape[1])
        out = np.einsum("ar,krc,bc->kab", self.ky, blocks, self.kx, optimize=True)
        return np.asarray(out.reshape(k, -1).T)

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        r, c = np.divmod(np.asarray(index), self.kx.shape[1])
        return np.asarray((self.ky[:, r][:, None, :] * self.kx[:, c][None, :, :]).reshape(self.shape[0], -1))

    def column_difference_norms(self, pairs: NDArray[np.intp], *, chunk: int = 4096) -> NDArray[np.float64]:
        """``‖M_p − M_q‖₂`` per pair; pairs in one grid row or column (every grid neighbour) from the factors.

        For ``p = (r, c)`` and ``q = (r, c')`` the difference is ``K_y[:, r] ⊗ (K_x[:, c] − K_x[:, c'])``, whose
        norm is the product of the two factors' norms (and likewise for a column), so the ``(sy sx) × k``
        differences are never formed: ``O((sy + sx) k)`` instead of ``O(sy sx k)`` for ``k`` pairs. Other pairs
        are computed from their columns.
        """
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        r, c = np.divmod(pairs, self.kx.shape[1])
        same_row = r[:, 0] == r[:, 1]
        same_col = ~same_row & (c[:, 0] == c[:, 1])
        out = np.empty(len(pairs))
        out[same_row] = (np.linalg.norm(self.ky, axis=0)[r[same_row, 0]]
                         * _factor_difference_norms(self.kx, c[same_row]))
        out[same_col] = (np.linalg.norm(self.kx, axis=0)[c[same_col, 0]]
                         * _factor_difference_norms(self.ky, r[same_col]))
        other = ~(same_row | same_col)
        if np.any(other):
            out[other] = super().column_difference_norms(pairs[other], chunk=chunk)
        return out

    def todense(self) -> NDArray[np.float64]:
        return np.asarray(np.kron(self.ky, self.kx), dtype=np.float64)


def _inside(name: str, pos: NDArray[np.float64], box: tuple[tuple[float, float], tuple[float, float]]) -> None:
    inside = np.ones(len(pos), dtype=bool)
    for axis, (lo, hi) in enumerate(box):
        inside &= (pos[:, axis] >= lo) & (pos[:, axis] <= hi)
    if not np.all(inside):
        bad = pos[~inside][0]
        (a0, a1), (b0, b1) = box
        raise InvalidParameterError(
            f"{name} must lie inside the floor [{a0:g}, {a1:g}] x [{b0:g}, {b1:g}]; "
            f"got a point at {tuple(bad.tolist())}", parameter=name
        )


def _check_box(box: object) -> tuple[tuple[float, float], tuple[float, float]]:
    try:
        arr = np.asarray(box, dtype=float)
    except (TypeError, ValueError):
        arr = np.zeros(0)
    if arr.shape != (2, 2):
        raise InvalidParameterError(f"box must be ((low0, high0), (low1, high1)), got {box!r}", parameter="box")
    out = ((float(arr[0, 0]), float(arr[0, 1])), (float(arr[1, 0]), float(arr[1, 1])))
    for k, (lo, hi) in enumerate(out):
        if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
            raise InvalidParameterError(f"box[{k}] must be a finite interval (low, high), high > low, got {(lo, hi)}",
                                        parameter="box", allowed="(low, high) with high > low, finite", got=(lo, hi))
    return out


def _sites_kernel(
    sources: Sites, pos: NDArray[np.float64], T: float, walls: str | None, box: object
) -> NDArray[np.float64]:
    """``M[s, c] = g(Δ₀) g(Δ₁)`` elementwise for sites, reflected per axis inside ``box`` with walls."""
    src = sources.positions
    if walls is None:
        if box is not None:
            raise InvalidParameterError("box is only used with walls='reflecting'; remove it or set walls",
                                        parameter="box")
        return _axis_kernel(pos[:, 0], src[:, 0], T, 0.0, None) * _axis_kernel(pos[:, 1], src[:, 1], T, 0.0, None)
    if box is None:
        raise InvalidParameterError("walls='reflecting' with Sites needs the room: box=((low0, high0), (low1, high1))",
                                    parameter="walls")
    room = _check_box(box)
    _inside("sources", src, room)
    _inside("sensors", pos, room)
    out = np.ones((len(pos), len(src)))
    for axis, (lo, hi) in enumerate(room):
        out *= _axis_kernel(pos[:, axis] - lo, src[:, axis] - lo, T, hi - lo, walls)
    return out


def heat_kernel_2d(
    source_grid: Grid | Sites,
    sensors: ArrayLike | Grid,
    t: float,
    *,
    mu: float = 0.5,
    walls: str | None = None,
    box: tuple[tuple[float, float], tuple[float, float]] | None = None,
) -> HeatKernel2D | KroneckerHeatKernel2D:
    """2-D heat diffusion on a floor plan: ``M[s, c] = exp(−d²/(4T)) / (4πT)``, ``T = μ t``.

    Parameters
    ----------
    source_grid : Grid or Sites
        Where sources may be: cell centres of a :class:`Grid` (coordinates ``(y, x)``) or
        arbitrary points, :class:`Sites` (coordinates ``(x, y)`` in metres).
    sensors : array_like of shape (k, 2) or Grid
        Sensor positions in the sources' coordinate order: ``(y, x)`` inside the floor
        ``[0, height] x [0, width]`` for a Grid (or a :class:`Grid` with the same extent whose
        cell centres are the sensors: the Kronecker-structured :class:`KroneckerHeatKernel2D`,
        fast matvecs, never densified); ``(x, y)`` anywhere for Sites.
    t : float
        Time lapse, > 0 (``T = μ t`` has the unit of length², e.g. m² with positions in metres).
    mu : float, default 0.5
        Diffusion constant, > 0.
    walls : {None, "reflecting"}
        ``None``: the free-space kernel (heat leaves the room, as in the papers' unbounded line).
        ``"reflecting"``: the room is a closed box with insulating walls (Neumann boundary), built
        by the method of images per axis; total heat is conserved, which is what a real room with
        walls does on the time scales of interest.
    box : ((low0, high0), (low1, high1)), optional
        The room for ``walls="reflecting"`` with :class:`Sites` (a Grid's room is its extent).

    Notes
    -----
    The 2-D kernel is the product of two 1-D kernels, ``g₂(dy, dx) = g(dy) g(dx)``, and the image
    sum of a box factorises per axis as well, so both wall models are separable.

    Examples
    --------
    >>> import numpy as np
    >>> from dpcloak.domains import Grid
    >>> f = np.full(16, 1 / 16)  # unit heat spread over a 4 x 4 floor
    >>> free = heat_kernel_2d(Grid((4, 4)), [[0.5, 0.5], [0.1, 0.9]], 0.01)
    >>> free.shape
    (2, 16)
    >>> boxed = heat_kernel_2d(Grid((4, 4)), [[0.5, 0.5], [0.1, 0.9]], 0.01, walls="reflecting")
    >>> bool(boxed.matvec(f)[1] > free.matvec(f)[1])  # walls keep heat near the corner sensor
    True
    """
    if not isinstance(source_grid, Grid | Sites):
        raise InvalidParameterError(
            f"source_grid must be a dpcloak Grid or Sites, got {type(source_grid).__name__}", parameter="source_grid"
        )
    t = check_real("t", t, low=0.0)
    mu = check_real("mu", mu, low=0.0)
    walls_value: Any = walls
    if walls_value is not None:
        check_choice("walls", walls_value, ("reflecting",))
    T = mu * t
    if isinstance(source_grid, Sites):
        if isinstance(sensors, Grid):
            raise InvalidParameterError("sensors must be an array of (x, y) positions with Sites sources, got a Grid",
                                        parameter="sensors")
        pos = check_array("sensors", sensors, shape=(None, 2))
        matrix = _sites_kernel(source_grid, pos, T, walls, box)
        return HeatKernel2D(matrix, domain=source_grid, sensors=pos, t=t, mu=mu, walls=walls)
    if box is not None:
        raise InvalidParameterError("box is only for Sites sources; a Grid's room is its extent", parameter="box")
    height, width = source_grid.extent
    ys, xs = source_grid.axes()
    if isinstance(sensors, Grid):
        if not np.allclose(sensors.extent, source_grid.extent):
            raise InvalidParameterError(
                f"sensor grid extent {sensors.extent} must equal the source grid extent {source_grid.extent}",
                parameter="sensor"
            )
        sy, sx = sensors.axes()
        ky = _axis_kernel(sy, ys, T, height, walls)
        kx = _axis_kernel(sx, xs, T, width, walls)
        return KroneckerHeatKernel2D(grid=source_grid, sensor_grid=sensors, ky=ky, kx=kx, t=t, mu=mu, walls=walls)
    pos = check_array("sensors", sensors, shape=(None, 2))
    _inside("sensors", pos, ((0.0, height), (0.0, width)))
    ky = _axis_kernel(pos[:, 0], ys, T, height, walls)
    kx = _axis_kernel(pos[:, 1], xs, T, width, walls)
    matrix = (ky[:, :, None] * kx[:, None, :]).reshape(len(pos), -1)
    return HeatKernel2D(matrix, domain=source_grid, sensors=pos, t=t, mu=mu, walls=walls)
