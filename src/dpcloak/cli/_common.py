"""Shared pieces of the CLI: the error wrapper, output helpers and model specifications."""

from __future__ import annotations

import functools
import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console

from dpcloak.errors import DpcloakError, InvalidParameterError

if TYPE_CHECKING:
    import networkx as nx

    from dpcloak.models import LinearModel

__all__ = ["console", "err_console", "cli_errors", "emit_json", "build_model", "GRAPH_KINDS", "MODEL_KINDS"]

console = Console(soft_wrap=True)  # never break a path or a message across lines
err_console = Console(stderr=True, soft_wrap=True)

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
    import networkx as nx

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
        from dpcloak.models.heat import heat_kernel_1d

        return heat_kernel_1d(n, m, t, mu=mu), f"1-D heat kernel, n={n}, m={m}, t={t:g}, mu={mu:g}"
    if model == "graph":
        from dpcloak.models.graph import graph_diffusion

        g = build_graph(graph, nodes, p_in=p_in, p_out=p_out, seed=seed)
        return graph_diffusion(g, tau), f"graph diffusion exp(-tau L), {graph} graph, {nodes} nodes, tau={tau:g}"
    raise InvalidParameterError(f"--model must be one of {', '.join(MODEL_KINDS)}, got {model!r}")


@dataclass(frozen=True)
class ModelSpec:
    """A forward model as described by the shared command-line options (see :func:`model_options`)."""

    model: str = "heat1d"
    n: int = 100
    m: int = 50
    t: float = 0.1
    mu: float = 0.5
    graph: str = "sbm"
    nodes: int = 100
    tau: float = 2.0
    p_in: float = 0.05
    p_out: float = 0.001
    seed: int = 0

    def build(self) -> tuple[LinearModel, str]:
        """The model and a one-line description of it."""
        return build_model(
            self.model, n=self.n, m=self.m, t=self.t, mu=self.mu, graph=self.graph, nodes=self.nodes,
            tau=self.tau, p_in=self.p_in, p_out=self.p_out, seed=self.seed,
        )


_MODEL_HELP = {
    "model": "Forward model: heat1d or graph.",
    "n": "heat1d: number of source locations.",
    "m": "heat1d: number of sensors.",
    "t": "heat1d: time lapse t (T = mu t).",
    "mu": "heat1d: diffusion constant.",
    "graph": "graph: complete, star, path or sbm.",
    "nodes": "graph: number of nodes.",
    "tau": "graph: diffusion time tau.",
    "p_in": "sbm: edge probability inside a community.",
    "p_out": "sbm: edge probability between communities.",
    "seed": "sbm: random seed of the graph.",
}


def model_options(fn: F) -> F:
    """Give a command the shared model options; it receives them as ``spec: ModelSpec``.

    The command's own signature must have a keyword ``spec`` parameter; Typer sees the model
    options (``--model``, ``--n``, ``--m``, ``--t``, ``--mu``, ``--graph``, ``--nodes``, ``--tau``,
    ``--p-in``, ``--p-out``, ``--seed``) in its place.
    """
    signature = inspect.signature(fn)
    own = [p for name, p in signature.parameters.items() if name != "spec"]
    injected = [
        inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, annotation=type(f.default),
            default=typer.Option(f.default, help=_MODEL_HELP[f.name]),
        )
        for f in fields(ModelSpec)
    ]

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        spec = ModelSpec(**{f.name: kwargs.pop(f.name) for f in fields(ModelSpec)})
        return fn(spec=spec, **kwargs)

    keyword_own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
    wrapper.__signature__ = signature.replace(parameters=injected + keyword_own)  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
