"""Explicit randomness: every random function takes ``rng`` and passes it through here."""

from __future__ import annotations

import numpy as np

from dpcloak.errors import InvalidParameterError

__all__ = ["RngLike", "as_generator"]

RngLike = np.random.Generator | int | np.integer | None


def as_generator(rng: RngLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from a Generator, a non-negative seed or ``None``.

    ``None`` draws fresh OS entropy. The global ``np.random`` state is never used.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise InvalidParameterError(
            f"rng must be a numpy.random.Generator, a non-negative integer seed or None, got {rng!r}", parameter="rng"
        )
    if rng < 0:
        raise InvalidParameterError(f"rng seed must be a non-negative integer, got {rng}", parameter="rng")
    return np.random.default_rng(int(rng))
