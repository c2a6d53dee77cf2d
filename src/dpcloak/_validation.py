"""Validation helpers shared by every public boundary.

Each helper raises :class:`~dpcloak.errors.InvalidParameterError` with a message that names the
parameter, the allowed range and the value received, and returns the validated (converted) value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcloak.errors import InvalidParameterError

__all__ = [
    "check_int",
    "check_real",
    "check_probability",
    "check_choice",
    "check_array",
    "check_vector",
    "available_memory",
    "check_memory",
    "format_bytes",
]


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise InvalidParameterError(f"{name} must be an integer, got {_describe(value)}", parameter=name,
                                        allowed="an integer", got=value)
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidParameterError(f"{name} must be an integer >= {minimum}, got {value}", parameter=name,
                                    allowed=f"an integer >= {minimum}", got=value)
    if maximum is not None and value > maximum:
        raise InvalidParameterError(f"{name} must be an integer <= {maximum}, got {value}", parameter=name,
                                    allowed=f"an integer <= {maximum}", got=value)
    return value


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = False,
    high_inclusive: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` inside the given (open by default) interval."""
    if isinstance(value, bool):
        raise InvalidParameterError(f"{name} must be a real number, got {value!r}", parameter=name,
                                    allowed="a real number", got=value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be a real number, got {_describe(value)}", parameter=name,
                                    allowed="a real number", got=value) from None
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise InvalidParameterError(f"{name} must be a finite real number, got {x}", parameter=name,
                                    allowed="a finite real number", got=x)
    lo_txt = "[" if low_inclusive else "("
    hi_txt = "]" if high_inclusive else ")"
    lo_val = "-inf" if low is None else f"{low:g}"
    hi_val = "inf" if high is None else f"{high:g}"
    range_txt = f"{lo_txt}{lo_val}, {hi_val}{hi_txt}"
    if low is not None and (x < low or (x == low and not low_inclusive)):
        raise InvalidParameterError(f"{name} must lie in {range_txt}, got {x:g}", parameter=name,
                                    allowed=range_txt, got=x)
    if high is not None and (x > high or (x == high and not high_inclusive)):
        raise InvalidParameterError(f"{name} must lie in {range_txt}, got {x:g}", parameter=name,
                                    allowed=range_txt, got=x)
    return x


def check_probability(name: str, value: Any, *, open_low: bool = True, open_high: bool = True) -> float:
    """Return ``value`` as a probability in (0, 1) (endpoints included on request)."""
    return check_real(name, value, low=0.0, high=1.0, low_inclusive=not open_low, high_inclusive=not open_high)


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise InvalidParameterError(f"{name} must be one of {allowed}, got {_describe(value)}", parameter=name,
                                    allowed=allowed, got=value)
    return value


def check_array(
    name: str,
    value: ArrayLike,
    *,
    ndim: int | None = None,
    shape: tuple[int | None, ...] | None = None,
    nonnegative: bool = False,
    allow_empty: bool = False,
    dtype: type = float,
    finite: bool = True,
) -> NDArray[Any]:
    """Return ``value`` as a finite ndarray of ``dtype``, checking its dimension and shape.

    ``finite=False`` skips the pass over the entries that refuses NaN and infinities, for a caller that
    checks them itself (e.g. inside a compiled loop that reads the entries anyway)."""
    try:
        arr: NDArray[Any] = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be an array of numbers, got {_describe(value)}", parameter=name,
                                    allowed="an array of numbers", got=_describe(value)) from None
    if ndim is not None and arr.ndim != ndim:
        raise InvalidParameterError(f"{name} must be a {ndim}-D array, got an array of shape {arr.shape}",
                                    parameter=name, allowed=f"a {ndim}-D array", got=arr.shape)
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape, strict=True))
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise InvalidParameterError(f"{name} must have shape {want}, got {arr.shape}", parameter=name,
                                        allowed=f"shape {want}", got=arr.shape)
    if arr.size == 0 and not allow_empty:
        raise InvalidParameterError(f"{name} must not be empty", parameter=name, allowed="not empty", got=arr.shape)
    if finite and np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise InvalidParameterError(f"{name} must be finite; it has {bad} NaN or infinite entries", parameter=name,
                                    allowed="finite entries", got=f"{bad} NaN or infinite entries")
    if nonnegative and arr.size and np.min(arr) < 0:
        raise InvalidParameterError(f"{name} must be non-negative; its minimum is {np.min(arr):g}", parameter=name,
                                    allowed="non-negative entries", got=float(np.min(arr)))
    return arr


def check_vector(
    name: str, value: ArrayLike, *, length: int | None = None, nonnegative: bool = False
) -> NDArray[np.float64]:
    """Return ``value`` as a finite 1-D float vector (of ``length`` if given)."""
    return check_array(name, value, shape=(length,), nonnegative=nonnegative)


def format_bytes(nbytes: float) -> str:
    """``nbytes`` in binary units, e.g. ``"3.7 GiB"``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}" if unit != "B" else f"{value:.0f} B"
        value /= 1024
    raise AssertionError("unreachable")


def available_memory() -> int:
    """Bytes this process may still allocate: the machine's available memory, capped by an address-space limit."""
    import resource

    available = _meminfo_available()
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        available = min(available, max(0, soft - _address_space_used()))
    return available


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os

    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError):
        return 2**62  # unknown: do not refuse on a guess


def _address_space_used() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def check_memory(what: str, nbytes: float, *, hint: str = "") -> None:
    """Refuse up front when ``what`` needs more memory than is available (the message names both amounts)."""
    available = available_memory()
    if nbytes > 0.8 * available:
        raise InvalidParameterError(
            f"{what} needs about {format_bytes(nbytes)} of memory, but {format_bytes(available)} is available"
            + (f"; {hint}" if hint else "")
        )
