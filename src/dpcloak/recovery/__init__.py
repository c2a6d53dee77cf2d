"""Recovery of sources from (privatized) readings: basis pursuit denoising and Bregman iteration."""

from dpcloak.recovery.bpdn import Recovery, bpdn
from dpcloak.recovery.compress import CompressedModel, clear_compression_cache, compress
from dpcloak.recovery.radius import RADIUS_POLICIES, RadiusChoice, choose_radius

__all__ = [
    "Recovery",
    "bpdn",
    "CompressedModel",
    "compress",
    "clear_compression_cache",
    "RADIUS_POLICIES",
    "RadiusChoice",
    "choose_radius",
]
