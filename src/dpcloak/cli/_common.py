"""Shared pieces of the CLI: the error wrapper, output helpers and model specifications."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from dpcloak.errors import DpcloakError, InvalidParameterError

if TYPE_CHECKING:
    import networkx as nx

    from dpcloak.models import LinearModel

__all__ = [
    "console",
    "err_console",
    "cli_errors",
    "emit_json",
    "build_synthetic_model",
    "flag",
    "user_message",
    "option_name",
    "addressed",
    "readdressed",
    "check_input_file",
    "check_text_file",
    "check_output_file",
    "check_output_dir",
    "progress_bar",
    "show_progress",
    "GRAPH_KINDS",
    "SYNTHETIC_MODELS",
    "PICTURE_SUFFIXES",
]

console = Console(soft_wrap=True)  # never break a path or a message across lines
err_console = Console(stderr=True, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])

SYNTHETIC_MODELS = ("heat1d", "graph")
PICTURE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".eps", ".ps")
"""Picture formats the plotting back end writes (chosen by the file's extension)."""
GRAPH_KINDS = ("complete", "star", "path", "sbm")


_FLAGS = {"as_json": "--json", "json_out": "--json", "list_": "--list", "directory": "DIRECTORY", "points": "POINTS",
          "experiment": "EXPERIMENT"}
"""Python parameter names whose option is not simply ``--name-with-dashes`` (arguments are in capitals)."""


def flag(name: str) -> str:
    """The command-line option of a command parameter called ``name``."""
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def cli_errors(fn: F) -> F:
    """Run a command so that every failure is one line on stderr: ``error: ...``, exit status 2.

    Before the command runs: a NaN given for any option, or a negative ``--seed``, is refused. While
    it runs: dpcloak's user errors, file-system errors (missing, unreadable or unwritable paths) and
    undecodable input files become one line naming the option the user gave. Anything else is a bug:
    one line saying so (exit status 1); ``DPCLOAK_DEBUG=1`` shows its traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _check_options(kwargs)
            return fn(*args, **kwargs)
        except DpcloakError as exc:
            _fail(user_message(exc, kwargs))
        except OSError as exc:
            _fail(_os_message(exc, kwargs))
        except UnicodeDecodeError as exc:
            _fail(f"an input file is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 CSV")
        except MemoryError:
            _fail("ran out of memory: the problem is larger than this machine can hold; try smaller sizes")
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug: say so in one line, not a traceback
            if os.environ.get("DPCLOAK_DEBUG"):
                raise
            _fail(f"internal error (a bug in dpcloak, please report it): {type(exc).__name__}: {exc}; set "
                  "DPCLOAK_DEBUG=1 to see the traceback", code=1)

    return wrapper  # type: ignore[return-value]


def _fail(message: str, *, code: int = 2) -> NoReturn:
    one_line = " ".join(message.split())
    err_console.print(f"[bold red]error:[/] {escape(one_line)}", highlight=False)
    raise typer.Exit(code=code)


def _check_options(kwargs: dict[str, Any]) -> None:
    for name, value in kwargs.items():
        if isinstance(value, float) and math.isnan(value):
            raise InvalidParameterError(f"{flag(name)} must be a number, got nan", parameter=flag(name))
        if name == "seed" and isinstance(value, int) and value < 0:
            raise InvalidParameterError(f"--seed must be a non-negative integer, got {value}", parameter="--seed")


def user_message(exc: DpcloakError, kwargs: dict[str, Any], names: dict[str, str] | None = None) -> str:
    """The error's message addressed to the command-line option it is about, found from the error's fields.

    The option is the error's ``parameter`` when it already is one (``--tau``, ``POINTS``), the option
    ``names`` maps it to, or the command's own option of that name; a file error (``path``) names the
    option that gave the file. The message is never searched for words: it gets the option in front,
    or in place of the parameter's name when it starts with it.
    """
    parameter = exc.parameter
    path = getattr(exc, "path", None)
    message = str(exc)
    if path is not None:
        option = _option_of_path(path, kwargs)
        if option is not None and option not in message:
            lead = "" if message.startswith(str(path)) else f"{path}: "
            return f"{option} {lead}{message}"
        return message
    if parameter is None:
        return message
    option = option_name(parameter, kwargs, names)
    return message if option is None else addressed(message, parameter, option)


def option_name(parameter: str, kwargs: dict[str, Any], names: dict[str, str] | None = None) -> str | None:
    """The command-line option of a library ``parameter``: itself when it is one, else from ``names`` or ``kwargs``."""
    if parameter.startswith("-") or parameter.isupper():
        return parameter
    if names and parameter in names:
        return names[parameter]
    return flag(parameter) if parameter in kwargs else None


def addressed(message: str, parameter: str, option: str) -> str:
    """``message`` led by ``option``: in place of a leading ``parameter``, else in front of the message."""
    if parameter == option or message.startswith(option):
        return message
    after = message[len(parameter):len(parameter) + 1]
    if message.startswith(parameter) and not (after.isalnum() or after == "_"):
        return option + message[len(parameter):]
    return f"{option}: {message}"


def readdressed(exc: DpcloakError, names: dict[str, str]) -> DpcloakError:
    """``exc`` re-addressed to the option ``names`` gives its ``parameter`` (itself when it names none)."""
    if exc.parameter is None or exc.parameter not in names:
        return exc
    option = names[exc.parameter]
    clone = exc.with_message(addressed(str(exc), exc.parameter, option))
    clone.parameter = option
    return clone


def _option_of_path(path: Path, kwargs: dict[str, Any]) -> str | None:
    for name, value in kwargs.items():
        if isinstance(value, str) and value and (Path(value) == path or path.is_relative_to(Path(value))):
            return flag(name)
    return None


def _os_message(exc: OSError, kwargs: dict[str, Any]) -> str:
    path = exc.filename if exc.filename is not None else ""
    reason = exc.strerror or type(exc).__name__
    options = [flag(name) for name, value in kwargs.items() if isinstance(value, str) and value and (
        value == str(path) or str(path).startswith(value.rstrip("/") + "/"))]
    where = f"{options[0]} {path}" if options else str(path)
    return f"{where}: {reason}" if where else reason


def check_input_file(option: str, path: str | Path) -> Path:
    """``path`` as a readable file, or a one-line refusal naming ``option``."""
    p = Path(path)
    if not p.exists():
        raise InvalidParameterError(f"{option} {p}: no such file", parameter=option)
    if p.is_dir():
        raise InvalidParameterError(f"{option} {p}: is a directory, expected a file", parameter=option)
    try:
        with p.open("rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise InvalidParameterError(f"{option} {p}: cannot be read ({exc.strerror or exc})", parameter=option) from None
    return p


def check_text_file(option: str, path: str | Path) -> Path:
    """``path`` as a readable UTF-8 text file, checked by the library's reader (its error names ``option``)."""
    from dpcloak._textfiles import read_text

    read_text(path, what="file", parameter=option)
    return Path(path)


def check_output_file(option: str, path: str | Path, *, suffixes: tuple[str, ...] = ()) -> Path:
    """``path`` as a file that can be written (an existing file is replaced), or a refusal naming ``option``."""
    p = Path(path)
    if suffixes and p.suffix.lower() not in suffixes:
        raise InvalidParameterError(f"{option} {p}: unsupported extension {p.suffix or '(none)'!r}; use "
                                    f"{', '.join(suffixes)}", parameter=option)
    if p.is_dir():
        raise InvalidParameterError(f"{option} {p}: is a directory; give a file name", parameter=option)
    _check_writable_dir(option, p.parent if str(p.parent) else Path("."), p)
    return p


def check_output_dir(option: str, path: str | Path) -> Path:
    """``path`` as a directory that exists or can be created, or a refusal naming ``option``."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InvalidParameterError(f"{option} {p}: exists and is not a directory", parameter=option)
    existing = p
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InvalidParameterError(f"{option} {p}: {existing} is not a directory", parameter=option)
    _check_writable_dir(option, existing, p)
    return p


def _check_writable_dir(option: str, directory: Path, target: Path) -> None:
    if not directory.exists():
        raise InvalidParameterError(f"{option} {target}: directory {directory} does not exist", parameter=option)
    if not directory.is_dir():
        raise InvalidParameterError(f"{option} {target}: {directory} is not a directory", parameter=option)
    try:
        import tempfile

        with tempfile.NamedTemporaryFile(dir=directory, prefix=".dpcloak-probe-"):
            pass
    except OSError as exc:
        raise InvalidParameterError(f"{option} {target}: cannot write in {directory} "
                                    f"({exc.strerror or exc})", parameter=option) from None


def show_progress(quiet: bool) -> bool:
    """Whether to draw a progress bar: not with ``--quiet``, and only on a terminal."""
    return not quiet and err_console.is_terminal


@contextlib.contextmanager
def progress_bar(enabled: bool, label: str) -> Iterator[Callable[[int, int, str], None]]:
    """A transient rich progress bar on stderr; yields ``update(done, total, step)`` (a no-op when disabled)."""
    if not enabled:
        yield lambda done, total, step: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err_console, transient=True) as bar:
        task = bar.add_task("", total=None)

        shown = [""]

        def update(done: int, total: int, step: str) -> None:
            bar.update(task, completed=done, total=total, description=step)
            if step != shown[0]:  # a new step is drawn at once, however fast it is over
                shown[0] = step
                bar.refresh()

        yield update


def emit_json(payload: dict[str, Any]) -> None:
    """Write one JSON object to stdout."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def build_graph(kind: str, nodes: int, *, p_in: float, p_out: float, seed: int) -> nx.Graph:
    """A graph of the given kind; ``sbm`` is two equal communities with the given probabilities."""
    import networkx as nx

    if kind not in GRAPH_KINDS:
        raise InvalidParameterError(f"--graph must be one of {', '.join(GRAPH_KINDS)}, got {kind!r}",
                                    parameter="--graph")
    if nodes < 2:
        raise InvalidParameterError(f"--nodes must be an integer >= 2, got {nodes}", parameter="--nodes")
    from dpcloak._validation import check_memory

    edges = {"complete": nodes * (nodes - 1) / 2, "star": nodes - 1, "path": nodes - 1}.get(
        kind, p_in * nodes**2 / 4 + p_out * nodes**2 / 4)
    # networkx keeps ~0.5 KiB per edge and ~1 KiB per node; the diffusion exp(-tau L) has nodes² entries
    check_memory(f"a {kind} graph of {nodes} nodes (~{edges:.3g} edges) and its diffusion matrix",
                 512 * edges + 1024 * nodes + 8 * float(nodes) ** 2, hint="use fewer --nodes")
    if kind == "complete":
        return nx.complete_graph(nodes)
    if kind == "star":
        return nx.star_graph(nodes - 1)
    if kind == "path":
        return nx.path_graph(nodes)
    for name, p in (("--p-in", p_in), ("--p-out", p_out)):
        if not 0.0 <= p <= 1.0:
            raise InvalidParameterError(f"{name} must lie in [0, 1], got {p:g}", parameter=name)
    sizes = [nodes // 2, nodes - nodes // 2]
    return nx.stochastic_block_model(sizes, [[p_in, p_out], [p_out, p_in]], seed=seed)


def build_synthetic_model(
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
        from dpcloak._validation import check_real
        from dpcloak.models.graph import graph_diffusion

        check_real("--tau", tau, low=0.0)
        for name, p in (("--p-in", p_in), ("--p-out", p_out)):
            check_real(name, p, low=0.0, high=1.0, low_inclusive=True, high_inclusive=True)

        g = build_graph(graph, nodes, p_in=p_in, p_out=p_out, seed=seed)
        return graph_diffusion(g, tau), f"graph diffusion exp(-tau L), {graph} graph, {nodes} nodes, tau={tau:g}"
    raise InvalidParameterError(f"--model must be one of {', '.join(SYNTHETIC_MODELS)}, got {model!r}",
                                parameter="--model")


@dataclass(frozen=True)
class SyntheticModel:
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
        """The model and a one-line description of it (options of another kind of model are refused)."""
        defaults = SyntheticModel()
        own = {"heat1d": ("n", "m", "t", "mu"), "graph": ("graph", "nodes", "tau", "p_in", "p_out", "seed")}
        sbm_only = ("p_in", "p_out", "seed")
        ignored = [name for kind, names in own.items() if kind != self.model for name in names
                   if getattr(self, name) != getattr(defaults, name)]
        if self.model == "graph" and self.graph != "sbm":
            ignored += [name for name in sbm_only if getattr(self, name) != getattr(defaults, name)]
        if ignored and self.model in own:
            kind = f"--model {self.model}" + (f" --graph {self.graph}" if self.model == "graph" else "")
            raise InvalidParameterError(f"{', '.join(flag(n) for n in ignored)}: not used by {kind}")
        return build_synthetic_model(
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
    """Give a command the shared model options; it receives them as ``spec: SyntheticModel``.

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
        for f in fields(SyntheticModel)
    ]

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        spec = SyntheticModel(**{f.name: kwargs.pop(f.name) for f in fields(SyntheticModel)})
        return fn(spec=spec, **kwargs)

    keyword_own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
    wrapper.__signature__ = signature.replace(parameters=injected + keyword_own)  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
