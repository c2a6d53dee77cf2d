"""Per-user bounding and snapping: each user is one distribution (ℓ1 ≤ 1), the only path into the mechanisms."""

import numpy as np
import pytest

from dpcloak.errors import InvalidParameterError
from dpcloak.heatmaps.data import (
    FIXED_POINT_BITS,
    UserAggregate,
    bound_distributions,
    bound_users,
    check_resolution,
    snap,
)


def test_snap_matches_floor_definition():
    # Oracle: §2 of Ghazi et al., the cell of (x, y) is (⌊yΔ⌋, ⌊xΔ⌋).
    x = np.array([0.0, 0.124, 0.125, 0.999999, 0.5])
    y = np.array([0.0, 0.9, 0.3, 0.0, 0.5])
    cells = snap(x, y, resolution=8)
    rows, cols = np.divmod(cells, 8)
    np.testing.assert_array_equal(cols, [0, 0, 1, 7, 4])
    np.testing.assert_array_equal(rows, [0, 7, 2, 0, 4])


def test_user_with_many_points_contributes_one_distribution():
    # Oracle: p_i = (1/c) Σ 1_cell for a user with c points (Ghazi et al. §2.3), computed by hand.
    rng = np.random.default_rng(0)
    heavy = 5000
    users = np.concatenate([np.zeros(heavy, dtype=int), [1, 2, 2]])
    x = np.concatenate([rng.random(heavy) * 0.5, [0.9, 0.9, 0.1]])
    y = np.concatenate([rng.random(heavy) * 0.5, [0.9, 0.1, 0.9]])
    agg = bound_users(users, x, y, resolution=4)
    assert agg.n_users == 3 and agg.n_points == heavy + 3
    s = agg.sums
    # The heavy user's 5000 points occupy the lower-left 2×2 block with total mass ≤ 1.
    heavy_mass = s[:2, :2].sum()
    assert heavy_mass <= 1.0 and heavy_mass > 1.0 - heavy * 2.0**-FIXED_POINT_BITS
    assert s[3, 3] == pytest.approx(1.0)  # user 1
    assert s[0, 3] == pytest.approx(0.5) and s[3, 0] == pytest.approx(0.5)  # user 2, two points
    expected = np.zeros((4, 4))
    np.add.at(expected, ((y[:heavy] * 4).astype(int), (x[:heavy] * 4).astype(int)), 1.0 / heavy)
    np.testing.assert_allclose(s[:2, :2], expected[:2, :2], atol=1e-9)


def test_every_user_total_at_most_one_and_string_ids():
    rng = np.random.default_rng(1)
    users = rng.choice(np.array(["ann", "bob", "cy", "dee"]), size=999)
    x, y = rng.random(999), rng.random(999)
    agg = bound_users(users, x, y, resolution=16)
    assert agg.n_users == 4
    assert agg.fixed.sum() <= 4 * (1 << FIXED_POINT_BITS)
    assert agg.sums.sum() == pytest.approx(4.0, abs=1e-6)
    np.testing.assert_allclose(agg.normalized.sum(), 1.0)
    # Removing one user changes s by at most 1 in ℓ1 (the sensitivity of Theorem 3.1).
    keep = users != "bob"
    other = bound_users(users[keep], x[keep], y[keep], resolution=16)
    assert np.abs(agg.sums - other.sums).sum() <= 1.0


def test_order_independent_exact_sums():
    rng = np.random.default_rng(2)
    users = rng.integers(0, 50, 2000)
    x, y = rng.random(2000), rng.random(2000)
    perm = rng.permutation(2000)
    a = bound_users(users, x, y, resolution=32)
    b = bound_users(users[perm], x[perm], y[perm], resolution=32)
    np.testing.assert_array_equal(a.fixed, b.fixed)


def test_distributions_input():
    rng = np.random.default_rng(3)
    d = rng.random((5, 8, 8))
    d /= d.sum(axis=(1, 2), keepdims=True)
    agg = bound_distributions(d)
    assert agg.n_users == 5
    np.testing.assert_allclose(agg.sums, d.sum(axis=0), atol=1e-9)
    with pytest.raises(InvalidParameterError, match="total mass <= 1"):
        bound_distributions(d * 2)


def test_aggregate_cannot_be_built_by_hand():
    with pytest.raises(InvalidParameterError, match="only"):
        UserAggregate(fixed=np.zeros((2, 2), dtype=np.int64), resolution=2, n_users=1, n_points=1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"x": [0.1, np.nan], "y": [0.1, 0.2]}, "finite"),
        ({"x": [0.1, np.inf], "y": [0.1, 0.2]}, "finite"),
        ({"x": [0.1, 1.0], "y": [0.1, 0.2]}, r"\[0, 1\)"),
        ({"x": [0.1, 0.2], "y": [-0.1, 0.2]}, r"\[0, 1\)"),
        ({"x": [], "y": []}, "empty"),
        ({"x": [0.1], "y": [0.1, 0.2]}, "same length"),
    ],
)
def test_bad_points(kwargs, match):
    users = np.arange(len(kwargs["x"]))
    with pytest.raises(InvalidParameterError, match=match):
        bound_users(users, kwargs["x"], kwargs["y"], resolution=8)


def test_resolution_must_be_power_of_two():
    assert check_resolution(256) == 8 and check_resolution(1) == 0
    with pytest.raises(InvalidParameterError, match=r"power of two.*use 256 or 512"):
        check_resolution(300)
    with pytest.raises(InvalidParameterError):
        check_resolution(0)


@pytest.mark.parametrize(
    "users",
    [
        np.array([np.nan] * 1000, dtype=object),  # issue 12 defect 6: counted as 1000 users of mass 1 each
        np.array([None] * 1000, dtype=object),
        np.array([7, None, 7, 8] * 250, dtype=object),
        np.array([7.0, np.nan] * 500),
    ],
)
def test_missing_user_ids_are_refused(users):
    with pytest.raises(InvalidParameterError, match="missing ids"):
        bound_users(users, np.full(users.size, 0.5), np.full(users.size, 0.5), resolution=4)


def test_pandas_missing_ids_are_refused():
    pd = pytest.importorskip("pandas")
    ids = pd.Series(["a", None, "b"], dtype="string").to_numpy()  # pandas.NA inside an object array
    with pytest.raises(InvalidParameterError, match="missing"):
        bound_users(ids, [0.1, 0.2, 0.3], [0.1, 0.2, 0.3], resolution=4)


def test_mixed_id_types_follow_one_documented_rule():
    # Rule (check_user_ids): numbers compare by value, strings as text, a mix of both is refused.
    x, y = np.full(3, 0.5), np.full(3, 0.5)
    with pytest.raises(InvalidParameterError, match=r"all numbers or all strings.*1 and '1'"):
        bound_users(np.array([1, "1", 2], dtype=object), x, y, resolution=4)
    # Oracle: 1, 1.0 and np.int64(1) are one user, so n = 2 and that user's two points weigh 1/2 each.
    same = bound_users(np.array([1, 1.0, np.int64(2)], dtype=object), np.array([0.1, 0.9, 0.5]), y, resolution=2)
    assert same.n_users == 2 and same.sums[1, 0] == pytest.approx(0.5) and same.sums[1, 1] == pytest.approx(1.5)
    as_text = bound_users(np.array(["ann", "bob", "ann"], dtype=object), x, y, resolution=4)
    as_unicode = bound_users(np.array(["ann", "bob", "ann"]), x, y, resolution=4)
    np.testing.assert_array_equal(as_text.fixed, as_unicode.fixed)
    assert as_text.n_users == 2
    with pytest.raises(InvalidParameterError, match="type bool"):
        bound_users(np.array([True, 1, 2], dtype=object), x, y, resolution=4)


def test_accumulate_cells_matches_an_add_at_oracle_and_counts_the_points_outside():
    # Oracle: numpy's np.add.at on the floor-definition cells of the points inside, and a per-user Python sum;
    # the edge values: -0.0 and the largest double below 1 are inside, -tiny, 1.0, inf and NaN outside.
    from dpcloak.heatmaps.data import accumulate_cells, fixed_point_weights

    rng = np.random.default_rng(3)
    n = 20_000
    x, y = rng.random(n), rng.random(n)
    edges = [-0.0, np.nextafter(1.0, 0.0), -1e-300, 1.0, np.inf, np.nan]
    x[:6], y[6:12] = edges, edges
    ids = rng.integers(10**12, 10**12 + 1000, n)  # raw ids, shifted by their minimum
    weights = fixed_point_weights(np.bincount(ids - 10**12, minlength=1000))
    out = np.zeros(64 * 64, dtype=np.int64)
    assert accumulate_cells(out, x, y, 6, weights, ids, offset=10**12) == 8
    inside = np.ones(n, dtype=bool)
    inside[[2, 3, 4, 5, 8, 9, 10, 11]] = False
    oracle = np.zeros(64 * 64, dtype=np.int64)
    np.add.at(oracle, (np.floor(y[inside] * 64) * 64 + np.floor(x[inside] * 64)).astype(int),
              weights[ids[inside] - 10**12])
    np.testing.assert_array_equal(out, oracle)
    assert int(out.sum()) == sum(int(weights[c - 10**12]) for c in ids[inside].tolist())


def test_compact_integer_ids_use_a_one_pass_range_and_count_like_numpy_unique():
    # Oracle: numpy's min/max and np.unique's counts. Negative, huge and strided int64 ids; a weakened range
    # (ids[1:]) misses the minimum at position 0 and is told apart.
    from dpcloak.heatmaps._binning import id_range
    from dpcloak.heatmaps.data import user_codes

    rng = np.random.default_rng(4)
    for ids in (rng.integers(-500, 500, 5001), rng.integers(2**62, 2**62 + 300, 4000)[::3], np.array([7])):
        ids[0] = ids.min() - 1
        assert tuple(int(v) for v in id_range(ids)) == (int(ids.min()), int(ids.max()))
        if ids.size > 1:
            assert int(id_range(ids[1:])[0]) != int(ids.min())
        codes, counts = user_codes(ids, ids.size)
        _, expected = np.unique(ids, return_counts=True)
        np.testing.assert_array_equal(counts[counts > 0], expected)
        np.testing.assert_array_equal(codes + int(ids.min()), ids)


def test_one_pass_counts_grow_their_table_like_numpy_unique_and_keep_the_compact_bound():
    # Oracle: np.unique's values and counts. Orders that make the one-pass table grow down (descending ids), up
    # (ascending), from the middle, jump from end to end (the table reaches its largest size and the range pass
    # takes over) and sit at int64's ends. Both sides of the compactness bound max − min < 4n + 1024.
    from dpcloak.heatmaps._binning import count_compact
    from dpcloak.heatmaps.data import compact_counts

    rng = np.random.default_rng(5)
    n = 3000
    cases = {
        "random": rng.integers(0, 30, n), "descending": np.sort(rng.integers(-10**6, -10**6 + 3 * n, n))[::-1],
        "ascending": np.sort(rng.integers(0, 3 * n, n)),
        "both ends": np.concatenate([[0, 3 * n, -n // 2 - 600], rng.integers(0, 3 * n, n - 3)]),
        "int64 min": rng.integers(-2**63, -2**63 + 2 * n, n), "int64 max": rng.integers(2**63 - 2 * n, 2**63 - 1, n),
    }
    statuses = {}
    for name, ids in cases.items():
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        statuses[name] = int(count_compact(ids, 4 * n + 1024)[0])
        got = compact_counts(ids, n)
        assert got is not None, name
        codes, offset, counts = got
        values, expected = np.unique(ids, return_counts=True)
        assert offset == int(values[0]) and counts.size == int(values[-1]) - int(values[0]) + 1, name
        np.testing.assert_array_equal(np.flatnonzero(counts) + offset, values.astype(object))
        np.testing.assert_array_equal(counts[counts > 0], expected)
        assert codes is ids or np.array_equal(codes, ids)
    assert statuses["both ends"] == 2 and statuses["random"] == statuses["descending"] == 0
    base = np.array([0, 4 * n + 1023] + [5] * (n - 2), dtype=np.int64)  # max − min = 4n + 1023: compact
    assert compact_counts(base, n) is not None
    base[1] += 1  # 4n + 1024: not compact, in one pass (status 1) and as a result
    assert int(count_compact(base, 4 * n + 1024)[0]) == 1 and compact_counts(base, n) is None


def test_blocked_accumulation_matches_add_at_across_block_boundaries():
    # Oracle: np.add.at on the floor-definition cells; points outside [0, 1)² (and NaN) on both sides of block
    # boundaries and as the last point.
    from dpcloak.heatmaps._binning import BLOCK
    from dpcloak.heatmaps.data import accumulate_cells

    rng = np.random.default_rng(6)
    n = 2 * BLOCK + 17
    x, y = rng.random(n), rng.random(n)
    bad = [BLOCK - 1, BLOCK, 2 * BLOCK, n - 1]
    x[bad[:2]] = [1.0, np.nan]
    y[bad[2:]] = [-1e-300, np.inf]
    ids = rng.integers(0, 50, n)
    weights = rng.integers(1, 2**40, 50)
    inside = np.ones(n, dtype=bool)
    inside[bad] = False
    for ell in (3, 9):
        side = 1 << ell
        out = np.zeros(side * side, dtype=np.int64)
        assert accumulate_cells(out, x, y, ell, weights, ids) == len(bad)
        oracle = np.zeros(side * side, dtype=np.int64)
        np.add.at(oracle, (np.floor(y[inside] * side) * side + np.floor(x[inside] * side)).astype(np.int64),
                  weights[ids[inside]])
        np.testing.assert_array_equal(out, oracle)
