"""The command line loads lazily: the command list and --version import no command module."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dpcloak.cli import COMMANDS, app, load_command, short_help

HEAVY = ("numpy", "scipy", "matplotlib", "numba", "networkx", "dp_accounting")


@pytest.mark.parametrize("args", [["--help"], ["--version"], []])
def test_root_imports_no_command_module(args: list[str]) -> None:
    code = (
        "import sys\nfrom dpcloak.cli import app\n"
        f"try:\n    app({args!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {set(HEAVY)!r}"
        " or m.startswith(('dpcloak.cli.', 'dpcloak.privacy', 'dpcloak.models'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert short_help(name)
    assert (command.help or "").strip().splitlines()[0] == short_help(name)


def test_command_list_names_every_command() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in result.output


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command" in result.output


def test_sensitivity_of_heat1d_imports_no_graph_or_sparse_solver() -> None:
    """``dpcloak sensitivity --model heat1d`` pays for numpy only: no networkx, scipy.sparse.linalg or optimize."""
    code = (
        "import sys\nfrom dpcloak.cli import app\n"
        "try:\n    app(['sensitivity', '--json'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m in ('networkx', 'scipy.sparse.linalg', 'scipy.optimize', "
        "'matplotlib', 'dp_accounting', 'dpcloak.privacy.accounting')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_lazy_packages_still_export_every_name() -> None:
    code = (
        "import importlib\n"
        "for name in ('dpcloak.privacy', 'dpcloak.models', 'dpcloak.domains'):\n"
        "    package = importlib.import_module(name)\n"
        "    assert all(getattr(package, n) is not None for n in package.__all__), name\n"
        "    assert set(package.__all__) <= set(dir(package)), name\n"
        "import dpcloak.privacy\nprint(dpcloak.privacy.fisher.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "dpcloak.privacy.fisher"  # submodules still reachable as attributes
