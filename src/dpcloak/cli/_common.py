"""Shared pieces of the CLI: the error wrapper, output helpers and model specifications."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import networkx as nx
import typer
from rich.console import Console

from dpcloak.errors import DpcloakError, InvalidParameterError
from dpcloak.models import LinearModel, graph_diffusion, heat_kernel_1d

__all__ = ["console", "err_console", "cli_errors", "emit_json", "build_model", "GRAPH_KINDS", "MODEL_KINDS"]

console = Console()
err_console = Console(stderr=True)

F = TypeVar("F", bound=Callable[..., Any])

MODEL_KINDS = ("heat1d", "graph")
GRAPH_KINDS = ("complete", "star", "path", "sbm")


def cli_errors(fn: F) -> F:
    """Turn dpcloak's user errors into a one-line message on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DpcloakError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
            raise typer.Exit(code=2) from None

    return wrapper  # type: ignore[return-value]


def emit_json(payload: dict[str, Any]) -> None:
    """Write one JSON object to stdout."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def build_graph(kind: str, nodes: int, *, p_in: float, p_out: float, seed: int) -> nx.Graph:
    """A graph of the given kind; ``sbm`` is two equal communities with the given probabilities."""
    if kind not in GRAPH_KINDS:
        raise InvalidParameterError(f"--graph must be one of {', '.join(GRAPH_KINDS)}, got {kind!r}")
    if nodes < 2:
        raise InvalidParameterError(f"--nodes must be an integer >= 2, got {nodes}")
    if kind == "complete":
        return nx.complete_graph(nodes)
    if kind == "star":
        return nx.star_graph(nodes - 1)
    if kind == "path":
        return nx.path_graph(nodes)
    for name, p in (("--p-in", p_in), ("--p-out", p_out)):
        if not 0.0 <= p <= 1.0:
            raise InvalidParameterError(f"{name} must lie in [0, 1], got {p:g}")
    sizes = [nodes // 2, nodes - nodes // 2]
    return nx.stochastic_block_model(sizes, [[p_in, p_out], [p_out, p_in]], seed=seed)


def build_model(
    model: str,
    *,
    n: int,
    m: int,
    t: float,
    mu: float,
    graph: str,
    nodes: int,
    tau: float,
    p_in: float,
    p_out: float,
    seed: int,
) -> tuple[LinearModel, str]:
    """Build the model named on the command line and a one-line description of it."""
    if model == "heat1d":
        return heat_kernel_1d(n, m, t, mu=mu), f"1-D heat kernel, n={n}, m={m}, t={t:g}, mu={mu:g}"
    if model == "graph":
        g = build_graph(graph, nodes, p_in=p_in, p_out=p_out, seed=seed)
        return graph_diffusion(g, tau), f"graph diffusion exp(-tau L), {graph} graph, {nodes} nodes, tau={tau:g}"
    raise InvalidParameterError(f"--model must be one of {', '.join(MODEL_KINDS)}, got {model!r}")
