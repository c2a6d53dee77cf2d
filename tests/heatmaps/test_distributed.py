"""Dask path: the same exact sums as in memory, from a Dask DataFrame and from Parquet (``dask`` extra)."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps import bound_users, heatmap_from_frame, private_heatmap

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")
pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def _frame(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"user": rng.integers(0, 300, n), "x": rng.random(n) ** 2, "y": rng.random(n)})


def test_dask_sums_identical_to_in_memory(client):
    from dpcloak.heatmaps.distributed import bound_users_dask

    df = _frame()
    mem = bound_users(df.user.to_numpy(), df.x.to_numpy(), df.y.to_numpy(), resolution=64)
    for nparts in (1, 7):
        agg = bound_users_dask(dd.from_pandas(df, npartitions=nparts), resolution=64, client=client)
        np.testing.assert_array_equal(agg.fixed, mem.fixed)  # exact, bit for bit
        assert agg.n_users == mem.n_users and agg.n_points == mem.n_points


def test_parquet_and_frame_front_end(client, tmp_path):
    from dpcloak.heatmaps.distributed import bound_users_parquet

    df = _frame(seed=1)
    dd.from_pandas(df, npartitions=3).to_parquet(str(tmp_path / "pts"))
    agg = bound_users_parquet(tmp_path / "pts", resolution=32, client=client)
    mem = bound_users(df.user.to_numpy(), df.x.to_numpy(), df.y.to_numpy(), resolution=32)
    np.testing.assert_array_equal(agg.fixed, mem.fixed)
    res = heatmap_from_frame(dd.from_pandas(df, npartitions=3), epsilon=1.0, resolution=32, rng=5, simulation=True)
    ref = private_heatmap(df.user.to_numpy(), df.x.to_numpy(), df.y.to_numpy(), epsilon=1.0, resolution=32, rng=5,
                          simulation=True)
    np.testing.assert_array_equal(res.aggregate, ref.aggregate)


def test_bad_points_raise_on_cluster(client):
    from dpcloak.heatmaps.distributed import bound_users_dask

    df = _frame(200)
    df.loc[5, "x"] = 1.5
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\)"):
        bound_users_dask(dd.from_pandas(df, npartitions=2), resolution=16, client=client)
    with pytest.raises(InvalidParameterError, match=r"dask\.dataframe"):
        bound_users_dask(df, resolution=16)


def test_missing_and_mixed_ids_refused_on_cluster(client):
    from dpcloak.heatmaps.distributed import bound_users_dask

    df = _frame(200).astype({"user": object})
    df.loc[7, "user"] = None
    with pytest.raises(InvalidParameterError, match="missing ids"):
        bound_users_dask(dd.from_pandas(df, npartitions=2), resolution=16, client=client)
    mixed = _frame(200).astype({"user": object})
    mixed.loc[150:, "user"] = mixed.loc[150:, "user"].astype(str)  # strings only in the last partition
    import dask

    with dask.config.set({"dataframe.convert-string": False}):  # else dask itself turns every id into text
        frame = dd.from_pandas(mixed, npartitions=2)
    with pytest.raises(InvalidParameterError, match="all numbers or all strings"):
        bound_users_dask(frame, resolution=16, client=client)
