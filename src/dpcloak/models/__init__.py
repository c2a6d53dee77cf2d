"""Forward operators from sources to sensor readings."""

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
