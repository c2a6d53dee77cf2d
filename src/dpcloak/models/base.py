"""The :class:`LinearModel` interface: forward operators from sources to sensor readings."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak._validation import check_array, check_vector
from dpcloak.domains.base import Domain
from dpcloak.errors import InvalidParameterError

if TYPE_CHECKING:
    from scipy.sparse.linalg import LinearOperator

__all__ = ["LinearModel", "DenseModel", "by_support"]


def by_support(
    x: NDArray[np.float64], columns: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    full: Callable[[], NDArray[np.float64]], *, rows: int, cost: int,
) -> NDArray[np.float64]:
    """A product ``A x`` as ``A[:, S] x_S`` over the non-zeros ``S`` of ``x`` when that is cheaper, else ``full()``.

    Recovered maps and the points of the active-set solvers sit at zero except on a support of a few cells:
    ``rows · |S|`` products from the gathered columns instead of the ``cost`` multiplications of ``full``
    (e.g. ``p n`` for a Kronecker product whose first factor has ``p`` rows). Taken when
    ``8 rows |S| ≤ cost``, since gathering columns is slower per product than a matrix product. The same
    sum, in another order.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.arange(12.0).reshape(2, 6)
    >>> x = np.zeros(6); x[4] = 2.0
    >>> by_support(x, lambda s: A[:, s], lambda: A @ x, rows=2, cost=A.size).tolist(), (A @ x).tolist()
    ([8.0, 20.0], [8.0, 20.0])
    """
    support = np.flatnonzero(x != 0.0)  # a boolean mask first: several times faster than on the floats
    if 8 * rows * support.size > cost:
        return full()
    return np.asarray(columns(support) @ x[support])


class LinearModel(ABC):
    """A linear forward operator ``y = M f`` from sources on a :class:`Domain` to ``m`` sensors.

    Subclasses implement :meth:`_matvec`, :meth:`_rmatvec` and :meth:`todense`; the public
    methods validate their input. ``shape`` is ``(m, n)``: rows are sensors, columns are source
    locations of :attr:`domain`.

    Examples
    --------
    Every model (heat kernels, graph diffusion, a user matrix) is used through this interface:

    >>> from dpcloak.models import LinearModel, matrix_model
    >>> M = matrix_model([[1.0, 2.0], [0.0, 1.0]])
    >>> isinstance(M, LinearModel), M.shape, M.domain
    (True, (2, 2), Line(n=2))
    >>> M.matvec([1.0, 1.0]).tolist(), M.rmatvec([1.0, 1.0]).tolist()  # M f and Mᵀ y
    ([3.0, 1.0], [1.0, 3.0])
    >>> M.column_difference_norms([[0, 1]]).tolist()  # ‖M e₀ − M e₁‖₂ = √2
    [1.4142135623730951]

    >>> import numpy as np
    >>> M.matmat(np.eye(2)).tolist()
    [[1.0, 2.0], [0.0, 1.0]]
    >>> op = M.aslinearoperator()  # for scipy's iterative solvers
    >>> (op @ np.ones(2)).tolist(), op.rmatvec(np.ones(2)).tolist()
    ([3.0, 1.0], [1.0, 3.0])
    """

    def __init__(self, *, shape: tuple[int, int], domain: Domain, sensor_positions: NDArray[Any] | None) -> None:
        if shape[1] != domain.size:
            raise InvalidParameterError(
                f"model has {shape[1]} columns but its domain has {domain.size} locations; they must agree",
                parameter="model"
            )
        self._shape = (int(shape[0]), int(shape[1]))
        self._domain = domain
        self._sensor_positions = sensor_positions

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)``: number of sensors and number of source locations."""
        return self._shape

    @property
    def domain(self) -> Domain:
        """Where the sources live."""
        return self._domain

    @property
    def sensor_positions(self) -> NDArray[Any] | None:
        """Sensor positions (``(m,)`` on a line, ``(m, 2)`` on a floor, node indices on a graph)."""
        return self._sensor_positions

    # --- operator interface -------------------------------------------------------------------
    @abstractmethod
    def _matvec(self, x: NDArray[np.float64]) -> NDArray[np.float64]: ...

    @abstractmethod
    def _rmatvec(self, y: NDArray[np.float64]) -> NDArray[np.float64]: ...

    @abstractmethod
    def todense(self) -> NDArray[np.float64]:
        """The ``(m, n)`` matrix as a dense array."""

    def matvec(self, x: ArrayLike) -> NDArray[np.float64]:
        """Sensor readings ``M x`` for a source vector ``x`` of length ``n``."""
        return self._matvec(check_vector("x", x, length=self.shape[1]))

    def rmatvec(self, y: ArrayLike) -> NDArray[np.float64]:
        """Adjoint ``Mᵀ y`` for a reading vector ``y`` of length ``m``."""
        return self._rmatvec(check_vector("y", y, length=self.shape[0]))

    def matmat(self, x: ArrayLike) -> NDArray[np.float64]:
        """``M X`` for a block ``X`` of shape ``(n, k)``."""
        arr = check_array("X", x, shape=(self.shape[1], None))
        return np.column_stack([self._matvec(arr[:, k]) for k in range(arr.shape[1])])

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        """Columns ``M[:, index]`` as an ``(m, len(index))`` array."""
        eye = np.zeros((self.shape[1], len(index)))
        eye[np.asarray(index), np.arange(len(index))] = 1.0
        return self.matmat(eye)

    def column_difference_norms(self, pairs: NDArray[np.intp], *, chunk: int = 4096) -> NDArray[np.float64]:
        """``‖M_i − M_j‖₂`` for each row ``(i, j)`` of ``pairs``, computed in chunks."""
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        out = np.empty(len(pairs))
        for start in range(0, len(pairs), chunk):
            block = pairs[start : start + chunk]
            uniq, inv = np.unique(block.ravel(), return_inverse=True)
            cols = self.columns(uniq)
            inv = inv.reshape(-1, 2)
            out[start : start + len(block)] = np.linalg.norm(cols[:, inv[:, 0]] - cols[:, inv[:, 1]], axis=0)
        return out

    def aslinearoperator(self) -> LinearOperator:
        """The model as a :class:`scipy.sparse.linalg.LinearOperator`."""
        from scipy.sparse.linalg import LinearOperator

        return LinearOperator(self.shape, matvec=self._matvec, rmatvec=self._rmatvec, dtype=float)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, domain={self.domain!r})"


class DenseModel(LinearModel):
    """A model stored as a dense matrix.

    Examples
    --------
    >>> from dpcloak.models import DenseModel, matrix_model
    >>> M = matrix_model([[1.0, 2.0], [0.0, 1.0]])
    >>> isinstance(M, DenseModel)
    True
    >>> M.todense().tolist(), M.columns([1]).ravel().tolist()
    ([[1.0, 2.0], [0.0, 1.0]], [2.0, 1.0])
    """

    def __init__(
        self, matrix: NDArray[np.float64], *, domain: Domain, sensor_positions: NDArray[Any] | None = None
    ) -> None:
        self._matrix = np.ascontiguousarray(matrix, dtype=float)
        self._matrix.setflags(write=False)
        super().__init__(shape=self._matrix.shape, domain=domain, sensor_positions=sensor_positions)

    @property
    def matrix(self) -> NDArray[np.float64]:
        """The read-only dense matrix."""
        return self._matrix

    def _matvec(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._matrix @ x

    def _rmatvec(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._matrix.T @ y

    def matmat(self, x: ArrayLike) -> NDArray[np.float64]:
        return self._matrix @ check_array("X", x, shape=(self.shape[1], None))

    def columns(self, index: NDArray[np.intp]) -> NDArray[np.float64]:
        return self._matrix[:, np.asarray(index)]

    def column_difference_norms(self, pairs: NDArray[np.intp], *, chunk: int = 4096) -> NDArray[np.float64]:
        """``‖M_i − M_j‖₂`` per pair, accumulated over blocks of rows (cache-friendly gathers)."""
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        first, second = pairs[:, 0], pairs[:, 1]
        adjacent_run = len(pairs) == self.shape[1] - 1 and np.array_equal(first, np.arange(len(pairs)))
        adjacent_run = adjacent_run and np.array_equal(second, first + 1)
        squares = np.zeros(len(pairs))
        rows_per_block = max(1, (1 << 22) // max(1, len(pairs)))
        for start in range(0, self.shape[0], rows_per_block):
            block = self._matrix[start : start + rows_per_block]
            diff = block[:, 1:] - block[:, :-1] if adjacent_run else block[:, first] - block[:, second]
            squares += np.einsum("ij,ij->j", diff, diff)
        return np.sqrt(squares)

    def todense(self) -> NDArray[np.float64]:
        return self._matrix.copy()
