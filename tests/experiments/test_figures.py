"""Presentation rules of the experiment figures: the checker finds each fault, the helpers avoid them.

The per-experiment checks (every quick figure passes :func:`figure_problems`) sit next to each
experiment's own quick run in test_sensor / test_thesis / test_fisher / test_heatmaps; the two
heatmap experiments those files do not run are checked here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.ticker import NullFormatter
from scipy import stats

from dpcloak.experiments import get_experiment, plotting, run_experiment
from dpcloak.experiments.plotting import figure_problems
from dpcloak.experiments.report import quick_caption


def _rows(values_by_x, key="emd"):
    return [{"x": x, key: v, "error": ""} for x, values in values_by_x.items() for v in values]


def _good_figure():
    fig, axes = plotting.new_figure(1)
    plotting.errorbar(axes[0], _rows({1: [1.0, 1.2], 2: [2.0, 2.1], 3: [3.0, 3.3]}), "x", "emd", label="series")
    plotting.figure_legend(fig)
    return fig


def test_checker_passes_a_labelled_figure():
    assert figure_problems(_good_figure()) == []


def test_checker_finds_each_fault():
    fig, axes = plotting.new_figure(4, ncols=2)
    axes[0].plot([1, 2, 3], [1, 2, 3])  # no labels
    axes[1].set_xlabel("x")
    axes[1].set_ylabel("y")  # empty panel
    ax = axes[2]
    ax.plot(np.linspace(0, 1, 50), np.linspace(0, 1, 50), label="data")
    ax.legend(loc="center")  # on top of the diagonal
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax = axes[3]
    ax.imshow(np.arange(9.0).reshape(3, 3))  # colour-mapped, no colour bar
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    text = "\n".join(figure_problems(fig))
    assert "panel 0 (untitled): no x label" in text and "panel 0 (untitled): no y label" in text
    assert "panel 1 (untitled): empty" in text
    assert "panel 2 (untitled): legend covers data of 'data'" in text
    assert "panel 3 (untitled): colour-mapped image without a colour bar" in text


def test_checker_finds_a_log_axis_without_tick_labels():
    fig, axes = plotting.new_figure(1)
    ax = axes[0]
    ax.plot([20, 80], [1.0, 2.0])
    ax.set_xscale("log")  # less than a decade: matplotlib's major ticks fall outside, minor ones unlabelled
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("m")
    ax.set_ylabel("y")
    assert any("x axis has 0 tick label(s)" in p for p in figure_problems(fig))
    fig, axes = plotting.new_figure(1)
    axes[0].plot([20, 80], [1.0, 2.0])
    plotting.log_axes(axes[0])
    axes[0].set_xlabel("m")
    axes[0].set_ylabel("y")
    assert figure_problems(fig) == []


def test_checker_finds_overlapping_tick_labels_and_log_axes_avoids_them():
    x = np.logspace(-3, 2, 11)
    fig, axes = plotting.new_figure(1)
    axes[0].plot(x, x)
    axes[0].set_xscale("log")
    axes[0].set_xticks(x, [f"{v:g}" for v in x])
    axes[0].set_xlabel("t")
    axes[0].set_ylabel("y")
    assert "panel 0 (untitled): x tick labels overlap" in figure_problems(fig)
    fig, axes = plotting.new_figure(1)
    axes[0].plot(x, x)
    plotting.log_axes(axes[0])
    axes[0].set_xlabel("t")
    axes[0].set_ylabel("y")
    assert figure_problems(fig) == []


def test_shared_colour_bar_counts_for_every_panel_using_its_norm():
    from matplotlib.colors import Normalize

    fig, axes = plotting.new_figure(2)
    norm = Normalize(0.0, 8.0)
    for ax in axes:
        image = ax.imshow(np.arange(9.0).reshape(3, 3), norm=norm)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    fig.colorbar(image, ax=axes)
    assert figure_problems(fig) == []


def test_error_bars_stay_in_the_metric_range():
    values = [0.01, 0.02, 0.9]  # skewed: the symmetric t-interval reaches below 0
    mean = float(np.mean(values))
    half = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / math.sqrt(3)
    assert mean - half < 0  # the unclipped interval would be drawn below 0
    _fig, axes = plotting.new_figure(1)
    plotting.errorbar(axes[0], _rows({1: values, 2: [0.5, 0.6, 0.7]}), "x", "emd")
    (container,) = [c for c in axes[0].containers if isinstance(c, ErrorbarContainer)]
    segments = container.lines[2][0].get_segments()
    lows = [min(seg[:, 1]) for seg in segments]
    highs = [max(seg[:, 1]) for seg in segments]
    assert lows[0] == 0.0 and highs[0] == pytest.approx(mean + half)
    assert lows[1] == pytest.approx(0.6 - (0.6 - 0.5) * stats.t.ppf(0.975, 2) / math.sqrt(3))
    s = plotting.summarise(_rows({1: [0.9, 1.0, 0.99]}, "sim"), "x", "sim")  # SIM ≤ 1: the top is clipped
    lo, hi = plotting.clipped_interval(s, plotting.RANGES["sim"])
    assert s.mean[0] + hi[0] == pytest.approx(1.0) and s.mean[0] - lo[0] == pytest.approx(s.mean[0] - s.half[0])


def test_zero_mean_on_a_log_axis_is_marked_not_drawn_off_the_axis():
    _fig, axes = plotting.new_figure(1)
    plotting.errorbar(axes[0], _rows({20: [0.0], 80: [0.09]}), "x", "emd", label="paper")
    plotting.log_axes(axes[0])
    data = axes[0].containers[0].lines[0]
    assert np.isnan(data.get_ydata()[0]) and data.get_ydata()[1] == 0.09
    markers = [line for line in axes[0].lines if line.get_label() == "mean = 0 (not on a log axis)"]
    assert len(markers) == 1 and list(markers[0].get_xdata()) == [20.0]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["20", "80"]


def test_quick_caption_says_too_small_only_for_statistical_experiments():
    statistical, deterministic = get_experiment("sensor-fig4"), get_experiment("sensor-fig5")
    assert "too small to judge" in quick_caption(statistical, 1)
    assert "too small" not in quick_caption(deterministic, 1)
    assert f"{len(deterministic.quick_sweep)} points" in quick_caption(deterministic, 1)


@pytest.mark.parametrize("exp_id", ["heatmaps-fig2", "heatmaps-fig10"])
def test_heatmap_figures_not_run_elsewhere(exp_id, tmp_path):
    res = run_experiment(exp_id, quick=True, workers=1, progress=False, out=tmp_path)
    assert figure_problems(get_experiment(exp_id).plot(list(res.rows))) == []
