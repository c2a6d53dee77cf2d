"""Regenerate ``docs/figures/dashboard.png``: run the headless-Chromium dashboard test, copy its screenshot.

The test (``tests/service/test_dashboard.py``) writes its screenshot only to its temporary directory;
this script is the one place that updates the tracked figure. Needs the service extra, Playwright and
Debian's ``chromium``. Run from the repository root: ``PYTHONPATH=src python docs/figures/make_dashboard.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURE = ROOT / "docs" / "figures" / "dashboard.png"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dpcloak-dashboard-") as base:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={base}",
                        str(ROOT / "tests" / "service" / "test_dashboard.py")], check=True, cwd=ROOT)
        shots = sorted({shot.resolve() for shot in Path(base).glob("*/dashboard.png")})  # pytest adds a *current link
        if len(shots) != 1:
            sys.exit(f"expected one screenshot under {base}, found {len(shots)} (was the test skipped?)")
        shutil.copyfile(shots[0], FIGURE)
    sys.stdout.write(f"wrote {FIGURE.relative_to(ROOT)}\n")


if __name__ == "__main__":
    main()
