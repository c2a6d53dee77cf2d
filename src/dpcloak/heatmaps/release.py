"""What a heatmap release may contain, and where its randomness comes from.

A release is the DP output plus public parameters only. Everything else the curator learns while
computing it (the exact number of users and points, stage timings, which depend on the data's size)
is kept apart in :class:`CuratorDiagnostics`, labelled as not private.

Randomness of a release (:func:`release_randomness`): ``noise="secure"`` (the default of every front
end) draws exact discrete Laplace noise from the OS CSPRNG and refuses a seed or Generator, since
anyone who knows the seed can subtract the noise; reproducing a secure release from a seed is an
explicit ``simulation=True`` opt-in (tests, experiments). ``noise="float"`` (IEEE-double Laplace) is
itself the explicit opt-in for simulation, so it accepts a seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from dpcloak._rng import RngLike
from dpcloak._validation import check_choice
from dpcloak.errors import InvalidParameterError

__all__ = ["CuratorDiagnostics", "NOT_PRIVATE", "release_randomness"]

NOISES = ("float", "secure")
"""Noise kinds: ``"float"`` (numpy Laplace, experiments) and ``"secure"`` (exact discrete Laplace, deployment)."""

NOT_PRIVATE = "NOT private: curator-side diagnostics computed from the exact input; never publish them"


@dataclass(frozen=True)
class CuratorDiagnostics:
    """Exact facts about the input seen by the curator: **not differentially private**.

    They are not part of the release: do not publish them next to the heatmap (the exact number of
    users alone distinguishes neighbouring data sets).

    Attributes
    ----------
    n_users, n_points : int
        Number of users (distinct ids) and of input points.
    timings : mapping of str to float
        Seconds per stage (``bound``, ``noise``, ``reconstruct``, ``normalize``, ``total``); they grow
        with the input size.

    Examples
    --------
    Attached to every :class:`~dpcloak.heatmaps.HeatmapResult`, never part of the release:

    >>> from dpcloak.heatmaps import private_heatmap
    >>> result = private_heatmap([0, 0, 1], [0.1, 0.2, 0.7], [0.1, 0.2, 0.7], epsilon=1.0, resolution=4)
    >>> result.curator.n_users, result.curator.n_points, "total" in result.curator.timings
    (2, 3, True)
    >>> "n_users" in result.public_summary()
    False
    """

    n_users: int
    n_points: int
    timings: Mapping[str, float] = field(default_factory=dict)

    label: ClassVar[str] = NOT_PRIVATE


def release_randomness(rng: RngLike, noise: str, *, simulation: bool) -> RngLike:
    """Check the randomness of a release and return ``rng`` unchanged.

    Parameters
    ----------
    rng : Generator, int or None
        ``None`` (the OS CSPRNG for ``"secure"``, fresh OS entropy for ``"float"``), or a seed or
        Generator.
    noise : {"secure", "float"}
        Exact discrete Laplace (for releases) or IEEE-double Laplace (simulation and experiments).
    simulation : bool
        ``True`` lets a ``"secure"`` release be reproduced from a seed or Generator (tests, experiments);
        the result is then not a private release, since the seed determines the noise.

    Raises
    ------
    InvalidParameterError
        ``noise="secure"`` with a seed or Generator and ``simulation=False``.

    Examples
    --------
    >>> release_randomness(None, "secure", simulation=False) is None
    True
    >>> release_randomness(0, "secure", simulation=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dpcloak.errors.InvalidParameterError: rng must be None for a release with noise='secure' ...
    >>> release_randomness(0, "secure", simulation=True)
    0
    """
    kind = check_choice("noise", noise, NOISES)
    if kind == "secure" and rng is not None and not simulation:
        raise InvalidParameterError(
            f"rng must be None for a release with noise='secure' (the noise then comes from the OS CSPRNG), got "
            f"{type(rng).__name__} {rng!r}: whoever knows a seed can subtract the noise. Pass simulation=True to "
            "reproduce a release in a test or experiment, or noise='float' for simulation", parameter="rng"
        )
    return rng
