"""Recovery of sources from (privatized) readings: basis pursuit denoising and Bregman iteration.

Paper bounds (Gilbert & McMillan Theorems 8 and 10, Corollary 9; McMillan's thesis Theorem 8.6) live in
:mod:`dpcloak.recovery.bounds`; the CVXPY reference path in :mod:`dpcloak.recovery.reference`.
"""

from dpcloak.recovery.bpdn import Recovery, bpdn
from dpcloak.recovery.bregman import BregmanResult, bregman
from dpcloak.recovery.compress import CompressedModel, clear_compression_cache, compress
from dpcloak.recovery.radius import RADIUS_POLICIES, RadiusChoice, choose_radius

__all__ = [
    "Recovery",
    "bpdn",
    "BregmanResult",
    "bregman",
    "CompressedModel",
    "compress",
    "clear_compression_cache",
    "RADIUS_POLICIES",
    "RadiusChoice",
    "choose_radius",
]
