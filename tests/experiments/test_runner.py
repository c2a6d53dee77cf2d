"""Runner, registry and report machinery on a tiny synthetic experiment (oracle: direct computation)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from dpcloak.errors import ConvergenceError, DpcloakError, InvalidParameterError, MissingExtraError
from dpcloak.experiments import (
    Claim,
    Experiment,
    get_experiment,
    list_experiments,
    plotting,
    run_experiment,
    trial_seed,
    vary,
)


def _trial(params, rng):
    if params["x"] < 0:
        raise ConvergenceError("synthetic failure")
    return {"emd": params["x"] + float(rng.normal()), "sigma": 1.0}


def _plot(rows):
    fig, axes = plotting.new_figure(1)
    plotting.errorbar(axes[0], rows, "x", "emd")
    return fig


def _claims(rows):
    s = plotting.summarise(rows, "x", "emd")
    return [Claim.check("mean grows with x", f"{s.mean[0]:.2f} -> {s.mean[-1]:.2f}", s.mean[-1] > s.mean[0])]


TOY = Experiment(id="toy", title="toy", source="test", trial=_trial, sweep=vary("x", [-1, 0, 5]),
                 quick_sweep=vary("x", [0, 5]), plot=_plot, claims=_claims, trials=3, quick_trials=2)


def test_rows_seeds_and_files(tmp_path):
    res = run_experiment(TOY, workers=1, progress=False, out=tmp_path, seed=7)
    assert len(res.rows) == 9 and res.n_failed == 3
    assert [(r["point"], r["trial"]) for r in res.rows] == [(i, j) for i in range(3) for j in range(3)]
    for r in res.rows:  # oracle: the row is reproducible from its recorded seed alone
        assert r["seed"] == trial_seed(7, r["point"], r["trial"])
        if r["x"] >= 0:
            assert r["emd"] == r["x"] + np.random.default_rng(r["seed"]).normal()
    assert all(p.exists() for p in res.files)
    with res.files[0].open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 9 and {"seed", "x", "delta2", "sigma", "emd", "solve_time", "error"} <= set(table[0])
    assert sum(1 for r in table if r["error"]) == 3
    report = res.files[2].read_text()
    assert "failed trials (kept in `data.csv`, column `error`): 3" in report and "| mean grows with x |" in report


def test_processes_match_in_process(tmp_path):
    one = run_experiment(TOY, quick=True, workers=1, progress=False, out=tmp_path / "a")
    two = run_experiment(TOY, quick=True, workers=2, progress=False, out=tmp_path / "b")
    assert one.rows == two.rows


def test_validation():
    with pytest.raises(InvalidParameterError, match="trials"):
        run_experiment(TOY, trials=0, progress=False)
    with pytest.raises(InvalidParameterError, match="unknown experiment"):
        get_experiment("no-such-experiment")
    with pytest.raises(InvalidParameterError, match="verdict"):
        Claim("a", "b", "maybe")
    with pytest.raises(InvalidParameterError, match="sweep"):
        Experiment(id="e", title="", source="", trial=_trial, sweep=[], quick_sweep=[{}], plot=_plot, claims=_claims)


def test_mean_ci_matches_scipy():
    from scipy import stats

    x = [1.0, 2.0, 4.0, 7.0]
    lo, hi = stats.t.interval(0.95, 3, loc=np.mean(x), scale=stats.sem(x))
    mean, half = plotting.mean_ci(x)
    assert mean == pytest.approx((lo + hi) / 2) and half == pytest.approx((hi - lo) / 2)
    assert plotting.loglog_slope([1, 2, 4], [3, 12, 48]) == pytest.approx(2.0)


def test_registry_lists_ids_unique():
    ids = [e.id for e in list_experiments()]
    assert len(ids) == len(set(ids))


def test_dask_local_cluster_matches_local(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    local = run_experiment(TOY, workers=1, progress=False, out=tmp_path / "local")
    cluster_args = dict(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    with distributed.LocalCluster(**cluster_args) as cluster:
        by_address = run_experiment(TOY, scheduler=cluster.scheduler_address, progress=False, out=tmp_path / "addr")
        with distributed.Client(cluster) as client:
            by_client = run_experiment(TOY, scheduler=client, progress=False, out=tmp_path / "client")
    assert by_address.rows == local.rows == by_client.rows
    assert by_address.executor.startswith("dask(")


def test_dask_missing_names_the_extra(monkeypatch):
    import sys

    from dpcloak.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails as if dask were not installed
    with pytest.raises(MissingExtraError, match="dpcloak\\[dask\\]"):
        run_experiment(TOY, scheduler="tcp://127.0.0.1:1", progress=False)


def _needs_extra(params, rng):
    raise MissingExtraError("this trial needs the 'reference' extra: pip install 'dpcloak[reference]'")


def _always_fails(params, rng):
    raise ConvergenceError("synthetic failure")


@pytest.mark.parametrize("workers", [1, 2])
def test_missing_extra_stops_the_run_with_its_message(tmp_path, workers):
    exp = Experiment(id="needs-extra", title="t", source="test", trial=_needs_extra, sweep=vary("x", [0, 1, 2]),
                     quick_sweep=vary("x", [0]), plot=_plot, claims=_claims, trials=4)
    with pytest.raises(MissingExtraError, match=r"dpcloak\[reference\]"):
        run_experiment(exp, workers=workers, progress=False, out=tmp_path)
    assert not (tmp_path / "report.md").exists()


def test_every_trial_failing_is_an_error_not_an_empty_report(tmp_path):
    exp = Experiment(id="all-fail", title="t", source="test", trial=_always_fails, sweep=vary("x", [0, 1]),
                     quick_sweep=vary("x", [0]), plot=_plot, claims=_claims, trials=2)
    with pytest.raises(DpcloakError, match=r"every trial of all-fail failed.*ConvergenceError: synthetic failure"):
        run_experiment(exp, workers=1, progress=False, out=tmp_path)
