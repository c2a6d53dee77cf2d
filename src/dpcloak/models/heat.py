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
from dpcloak.models.base import DenseModel, LinearModel

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


class HeatKernel1D(DenseModel):
    """The 1-D heat-kernel matrix of Gilbert & McMillan: ``A[j, i] = g(i/n − j/m)`` with ``T = μ t``.

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
    """

    def __init__(self, *, n: int, m: int, t: float, mu: float) -> None:
        self.n, self.m, self.t, self.mu = n, m, t, mu
        self.T = mu * t
        domain = Line(n)
        sensors = np.arange(1, m + 1, dtype=float) / m
        matrix = gaussian_kernel_1d(sensors[:, None] - domain.points()[None, :], self.T)
        super().__init__(matrix, domain=domain, sensor_positions=sensors)

    def __repr__(self) -> str:
        return f"HeatKernel1D(n={self.n}, m={self.m}, t={self.t:g}, mu={self.mu:g})"


def heat_kernel_1d(n: int, m: int, t: float, *, mu: float = 0.5) -> HeatKernel1D:
    """The paper's 1-D heat-diffusion matrix (Gilbert & McMillan, section 2.1).

    Sources sit at ``i/n`` (``i = 1..n``), sensors at ``j/m`` (``j = 1..m``) and the readings are
    ``y = A f`` with ``A[j, i] = g(i/n − j/m)``, ``g(x) = exp(−x²/(4T))/√(4πT)``, ``T = μ t``
    (heat equation on the whole real line, no boundary).

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
    check_memory(f"the dense {m}x{n} heat kernel (m={m} sensors, n={n} sources)", 3 * 8 * m * n,
                 hint="use fewer sources or sensors")  # the matrix and two temporaries of its size
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
        F = x.reshape(self.ky.shape[1], self.kx.shape[1])
        return np.asarray((self.ky @ F @ self.kx.T).ravel())

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
            raise InvalidParameterError(f"box[{k}] must be a finite interval (low, high), high > low, got {(lo, hi)}")
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
