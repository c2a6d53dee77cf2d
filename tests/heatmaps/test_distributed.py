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


@pytest.mark.parametrize("ids", ["sparse", "split", "text"])
def test_every_user_table_gives_the_in_memory_sums(client, ids):
    # Pass 1 counts compact integer ids in dense tables and anything else by id; partitions whose dense tables do
    # not merge into a compact one (ids 0..299 and 10^15..10^15+299) fall back to counting by id. Oracle: the
    # in-memory bound_users on the same points (its own rule: numpy.unique codes for these ids), bit for bit.
    from dpcloak.heatmaps.distributed import bound_users_dask

    df = _frame(3000, seed=2).sort_values("user", kind="stable").reset_index(drop=True)
    if ids == "sparse":
        df["user"] = np.random.default_rng(3).integers(0, 2**62, 300)[df.user]
    elif ids == "split":
        df["user"] = np.where(df.user < 150, df.user, 10**15 + df.user)
    else:
        df["user"] = "u" + df.user.astype(str)
    frame = dd.from_pandas(df, npartitions=4, sort=False)
    # The path taken: dense per-partition tables only for "split" (merged with the partitions counted by id), and
    # the merged table counted by id in all three.
    from dpcloak.heatmaps.distributed import _add_counts, _partition_counts

    partials = [_partition_counts(part, "user") for part in (frame.get_partition(i).compute() for i in range(4))]
    assert any(c.dense is not None for c in partials) == (ids == "split")
    assert _add_counts(partials).sparse is not None
    mem = bound_users(df.user.to_numpy(), df.x.to_numpy(), df.y.to_numpy(), resolution=32)
    agg = bound_users_dask(frame, resolution=32, client=client)
    np.testing.assert_array_equal(agg.fixed, mem.fixed)
    assert agg.n_users == mem.n_users == 300 and agg.n_points == 3000


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


def test_parquet_is_read_in_runs_of_row_groups_and_batches(client, tmp_path, monkeypatch):
    # Small runs and batches so that one file gives several tasks and each task several batches: the sums stay those
    # of bound_users on all the points (oracle), the runs cover every row group once, and bad files are refused.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpcloak.heatmaps import distributed as dist

    df = _frame(1000, seed=5)
    (tmp_path / "pts").mkdir()
    pq.write_table(pa.Table.from_pandas(df.iloc[:700]), tmp_path / "pts" / "a.parquet", row_group_size=100)
    pq.write_table(pa.Table.from_pandas(df.iloc[700:]), tmp_path / "pts" / "b.parquet", row_group_size=128)
    monkeypatch.setattr(dist, "_TASK_ROWS", 250)
    monkeypatch.setattr(dist, "_BATCH", 64)
    files = [str(tmp_path / "pts" / "a.parquet"), str(tmp_path / "pts" / "b.parquet")]
    assert dist._tasks(files, ("user", "x", "y")) == [((files[0], (0, 1, 2)),), ((files[0], (3, 4, 5)),),
                                                      ((files[0], (6,)), (files[1], (0, 1))), ((files[1], (2,)),)]
    agg = dist.bound_users_parquet(tmp_path / "pts", resolution=32, client=client)
    mem = bound_users(df.user.to_numpy(), df.x.to_numpy(), df.y.to_numpy(), resolution=32)
    np.testing.assert_array_equal(agg.fixed, mem.fixed)
    assert (agg.n_users, agg.n_points) == (mem.n_users, 1000)
    with pytest.raises(InvalidParameterError, match="missing"):
        dist.bound_users_parquet(tmp_path / "pts" / "a.parquet", resolution=32, user="person", client=client)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidParameterError, match=r"\*\.parquet"):
        dist.bound_users_parquet(tmp_path / "empty", resolution=32, client=client)


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


def test_extent_is_applied_on_the_workers(client):
    from dpcloak.heatmaps import Extent
    from dpcloak.heatmaps.distributed import bound_users_dask

    rng = np.random.default_rng(4)
    df = pd.DataFrame({"user": rng.integers(0, 50, 400), "lon": -74.0 + rng.random(400) * 0.1,
                       "lat": 40.7 + rng.random(400) * 0.1})
    ext = Extent.lonlat_box(-74.0, 40.7, -73.9, 40.8)
    x, y, _ = ext.to_unit(df.lon, df.lat)
    mem = bound_users(df.user.to_numpy(), x, y, resolution=32)
    agg = bound_users_dask(dd.from_pandas(df, npartitions=3), resolution=32, x="lon", y="lat", extent=ext,
                           client=client)
    np.testing.assert_array_equal(agg.fixed, mem.fixed)
