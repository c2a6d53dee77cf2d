"""``dpcloak reproduce``: --list shows every experiment, a quick run writes the files, bad ids exit 2."""

from __future__ import annotations

from typer.testing import CliRunner

from dpcloak.cli import app

IDS = ["sensor-fig1", "sensor-fig2", "sensor-fig3", "sensor-fig4", "sensor-fig5", "thesis-fig8.1", "thesis-fig8.2",
       "thesis-fig8.3", "thesis-table8.2"]


def test_list_shows_all():
    result = CliRunner().invoke(app, ["reproduce", "--list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for exp_id in IDS:
        assert exp_id in result.output


def test_quick_run_writes_three_files(tmp_path):
    out = tmp_path / "fig5"
    result = CliRunner().invoke(app, ["reproduce", "sensor-fig5", "--quick", "--workers", "1", "--out", str(out)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {"data.csv", "figure.png", "report.md"}
    assert "too small to judge" in result.output and "confirmed" not in result.output  # a smoke sweep


def test_unknown_experiment_exits_2():
    result = CliRunner().invoke(app, ["reproduce", "no-such-figure"])
    assert result.exit_code == 2
    assert "unknown experiment" in result.output
