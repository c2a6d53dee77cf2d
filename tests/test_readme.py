"""The README keeps its promises: two set-up commands, CI runs the test one verbatim, the quick start runs."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _setup_commands():
    section = README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section, flags=re.S)


def test_setup_is_exactly_two_one_line_commands():
    commands = _setup_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    assert commands[0].endswith("dpcloak demo")
    assert "pytest" in commands[1] and ".[dev]" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _setup_commands()[1] in ci.splitlines()


def test_quick_start_runs_and_prints_what_it_says():
    block = README.split("## Quick start", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(block.strip().splitlines()) <= 10
    out = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT / "src")}
    ).stdout
    claims = [c.split()[-1] for c in re.findall(r"^print\(.*#(.*)$", block, flags=re.M)]
    claims = [c for c in claims if re.fullmatch(r"[-\d.(),]*\d[-\d.(),]*", c)]
    assert len(claims) >= 3
    for claim in claims:
        assert claim in out, f"quick start claims {claim!r} but printed:\n{out}"
