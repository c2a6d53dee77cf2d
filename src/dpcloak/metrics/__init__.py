"""Error metrics: exact Earth Mover's Distance (:func:`emd`) and the heatmap metrics."""

from dpcloak.metrics.earth_mover import emd

__all__ = ["emd"]
