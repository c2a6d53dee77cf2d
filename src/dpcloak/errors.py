"""The one error family of dpcloak.

Every error raised on purpose by dpcloak derives from :class:`DpcloakError`, so a caller (or the
CLI) can catch user mistakes without catching programming errors. Messages name the parameter, the
allowed range and the value received.
"""

from __future__ import annotations

__all__ = [
    "DpcloakError",
    "InvalidParameterError",
    "DisconnectedGraphError",
    "BudgetExceededError",
    "ConvergenceError",
    "MissingExtraError",
]


class DpcloakError(Exception):
    """Base class of every error dpcloak raises deliberately."""


class InvalidParameterError(DpcloakError, ValueError):
    """A parameter is outside its allowed range, has the wrong shape or is not finite."""


class DisconnectedGraphError(InvalidParameterError):
    """A graph must be connected for the requested operation (e.g. a shortest-path metric)."""


class BudgetExceededError(DpcloakError):
    """A privacy accountant refused a release because it would exceed the configured budget."""


class ConvergenceError(DpcloakError, RuntimeError):
    """A numerical routine did not reach the accuracy it promises."""


class MissingExtraError(DpcloakError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""
