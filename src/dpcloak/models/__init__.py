"""Forward operators from sources to sensor readings."""

from typing import TYPE_CHECKING

from dpcloak._lazy import lazy_exports

if TYPE_CHECKING:
    from dpcloak.models.base import DenseModel, LinearModel
    from dpcloak.models.graph import GraphDiffusion, graph_diffusion
    from dpcloak.models.graph_local import LocalGraphDiffusion
    from dpcloak.models.heat import (
        HeatKernel1D,
        HeatKernel2D,
        KroneckerHeatKernel2D,
        heat_kernel_1d,
        heat_kernel_2d,
    )
    from dpcloak.models.matrix import matrix_model

__all__ = [
    "LinearModel",
    "DenseModel",
    "HeatKernel1D",
    "HeatKernel2D",
    "KroneckerHeatKernel2D",
    "GraphDiffusion",
    "LocalGraphDiffusion",
    "heat_kernel_1d",
    "heat_kernel_2d",
    "graph_diffusion",
    "matrix_model",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "DenseModel": "dpcloak.models.base",
    "LinearModel": "dpcloak.models.base",
    "GraphDiffusion": "dpcloak.models.graph",
    "graph_diffusion": "dpcloak.models.graph",
    "LocalGraphDiffusion": "dpcloak.models.graph_local",
    "HeatKernel1D": "dpcloak.models.heat",
    "HeatKernel2D": "dpcloak.models.heat",
    "KroneckerHeatKernel2D": "dpcloak.models.heat",
    "heat_kernel_1d": "dpcloak.models.heat",
    "heat_kernel_2d": "dpcloak.models.heat",
    "matrix_model": "dpcloak.models.matrix",
})
