"""The one error family of dpcloak.

Every error raised on purpose by dpcloak derives from :class:`DpcloakError`, so a caller (or the
CLI) can catch user mistakes without catching programming errors. Messages name the parameter, the
allowed range and the value received; the same facts are fields of the error (``parameter``,
``allowed``, ``got``; for a file also ``path``, ``field`` and ``line``), so a program (the CLI, which
names its own option for ``parameter``) never has to read the message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "DpcloakError",
    "InvalidParameterError",
    "InvalidFileError",
    "DisconnectedGraphError",
    "BudgetExceededError",
    "LedgerIntegrityError",
    "ConvergenceError",
    "MissingExtraError",
]


class DpcloakError(Exception):
    """Base class of every error dpcloak raises deliberately.

    Examples
    --------
    Every deliberate error is a ``DpcloakError``, so one ``except`` catches bad input:

    >>> from dpcloak.privacy import LaplaceMechanism
    >>> try:
    ...     LaplaceMechanism(epsilon=-1.0, sensitivity=1.0)
    ... except DpcloakError as err:
    ...     print(type(err).__name__, "-", err)
    InvalidParameterError - epsilon must lie in (0, inf), got -1

    The facts of the message are fields too (``None`` when the raise site did not give them):

    >>> try:
    ...     LaplaceMechanism(epsilon=-1.0, sensitivity=1.0)
    ... except DpcloakError as err:
    ...     print(err.parameter, err.allowed, err.got)
    epsilon (0, inf) -1.0
    """

    def __init__(self, message: str = "", *, parameter: str | None = None, allowed: str | None = None,
                 got: Any = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        """The name of the parameter at fault, as the library's caller spells it (a keyword argument)."""
        self.allowed = allowed
        """What would be accepted, in words or interval notation."""
        self.got = got
        """The value received."""

    def with_message(self, message: str) -> DpcloakError:
        """A copy of this error (same class and fields) with another message, e.g. prefixed by context.

        Examples
        --------
        >>> err = InvalidParameterError("k must be >= 1, got 0", parameter="k", allowed=">= 1", got=0)
        >>> new = err.with_message("site.toml: " + str(err))
        >>> type(new).__name__, str(new), new.parameter, new.got
        ('InvalidParameterError', 'site.toml: k must be >= 1, got 0', 'k', 0)
        """
        clone = self.__class__.__new__(self.__class__)
        clone.__dict__.update(self.__dict__)
        clone.args = (message,)
        return clone


class InvalidParameterError(DpcloakError, ValueError):
    """A parameter is outside its allowed range, has the wrong shape or is not finite.

    Examples
    --------
    It is also a ``ValueError``; the message names the parameter, its range and the value:

    >>> from dpcloak.privacy import GaussianMechanism
    >>> issubclass(InvalidParameterError, ValueError)
    True
    >>> GaussianMechanism(epsilon=0.5, delta=2.0, sensitivity=1.0)
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: delta must lie in (0, 1), got 2
    """


class InvalidFileError(InvalidParameterError):
    """A file dpcloak reads does not follow its format: the error names the file, the field and the line.

    ``path`` is the file, ``field`` the key, column or field at fault (``None`` for the whole file,
    e.g. a bad encoding), ``line`` its 1-based line when the format has lines. ``parameter`` is the
    argument that named the file (e.g. ``"path"``), so the CLI can name its option.

    Examples
    --------
    >>> err = InvalidFileError("sensors.csv:3: lon must be a number, got 'x'", path="sensors.csv", field="lon",
    ...                        line=3, got="x")
    >>> str(err), err.path.name, err.field, err.line
    ("sensors.csv:3: lon must be a number, got 'x'", 'sensors.csv', 'lon', 3)
    >>> isinstance(err, InvalidParameterError)
    True
    """

    def __init__(self, message: str = "", *, path: str | Path | None = None, field: str | None = None,
                 line: int | None = None, parameter: str | None = "path", allowed: str | None = None,
                 got: Any = None) -> None:
        super().__init__(message, parameter=parameter, allowed=allowed, got=got)
        self.path = None if path is None else Path(path)
        """The file."""
        self.field = field
        """The key, column or field at fault (``None``: the whole file)."""
        self.line = line
        """The 1-based line, when the format has lines."""


class DisconnectedGraphError(InvalidParameterError):
    """A graph must be connected for the requested operation (e.g. a shortest-path metric).

    Examples
    --------
    >>> import networkx as nx
    >>> from dpcloak.domains import GraphDomain
    >>> GraphDomain(nx.empty_graph(3)).require_connected("the EMD")
    Traceback (most recent call last):
        ...
    dpcloak.errors.DisconnectedGraphError: graph must be connected for the EMD; it has 3 components
    >>> issubclass(DisconnectedGraphError, InvalidParameterError)
    True
    """


class BudgetExceededError(DpcloakError):
    """A privacy accountant refused a release because it would exceed the configured budget.

    Examples
    --------
    A sensor network refuses the release that would overspend, before drawing anything:

    >>> from dpcloak.sensors import Relation, SensorNetwork
    >>> net = SensorNetwork.from_coordinates(
    ...     sensors=[[0.0, 0.0], [100.0, 0.0]], relation=Relation.move(150.0),
    ...     epsilon=1.0, delta=1e-6, budget=(1.0, 1e-5), diffusion=2000.0)
    >>> net.max_releases()
    1
    >>> first = net.privatize([1.0, 2.0], rng=0, simulation=True)
    >>> net.privatize([1.0, 2.0], rng=0, simulation=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.BudgetExceededError: releasing 1 more release would spend epsilon=1.2...; nothing was released
    """


class LedgerIntegrityError(InvalidParameterError):
    """A persistent ledger is missing, truncated, edited, restored from an older copy or someone else's.

    Nothing is released from such a ledger (:mod:`dpcloak.privacy.ledger`): a count that cannot be
    verified could let the budget be spent again.

    Examples
    --------
    >>> issubclass(LedgerIntegrityError, InvalidParameterError)
    True
    >>> str(LedgerIntegrityError("ledger 'l.db': record 3 does not verify"))
    "ledger 'l.db': record 3 does not verify"
    """


class ConvergenceError(DpcloakError, RuntimeError):
    """A numerical routine did not reach the accuracy it promises.

    Examples
    --------
    A solver that stops early raises it; it is a ``RuntimeError`` as well:

    >>> issubclass(ConvergenceError, RuntimeError), issubclass(ConvergenceError, DpcloakError)
    (True, True)
    """


class MissingExtraError(DpcloakError, ImportError):
    """An optional dependency is needed; the message names the extra to install.

    Examples
    --------
    It is an ``ImportError`` too, so code that probes optional dependencies keeps working:

    >>> try:
    ...     raise MissingExtraError('backend="pyproj" needs pyproj: pip install "dpcloak[geo]"')
    ... except ImportError as err:
    ...     print(err)
    backend="pyproj" needs pyproj: pip install "dpcloak[geo]"
    """
