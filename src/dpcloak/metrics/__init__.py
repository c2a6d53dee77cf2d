"""Error metrics: exact Earth Mover's Distance and the heatmap metrics.

:func:`emd`, :func:`emd_plan` and :func:`emd_norm` work on any domain (see
:mod:`dpcloak.metrics.earth_mover` for the solvers and units); :mod:`dpcloak.metrics.heatmap`
holds SIM, Pearson CC, KL divergence and EMD on 2-D heatmaps (Ghazi et al., section 4).
:func:`as_distribution` is the one rule for the empty (all-zero) answer, used by both flows.
"""

from dpcloak.metrics import heatmap
from dpcloak.metrics.distribution import Distribution, as_distribution
from dpcloak.metrics.earth_mover import TransportPlan, emd, emd_norm, emd_plan

__all__ = ["Distribution", "TransportPlan", "as_distribution", "emd", "emd_norm", "emd_plan", "heatmap"]
