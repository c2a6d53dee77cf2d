"""``dpcloak heatmap`` end to end on a small CSV, and its error handling (one line, exit status 2)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dpcloak.cli import app


@pytest.fixture
def csv_path(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 600
    path = tmp_path / "points.csv"
    pd.DataFrame({"user": rng.integers(0, 60, n), "lat": 40 + rng.random(n) * 0.5,
                  "lon": -74 + rng.random(n) * 0.5}).to_csv(path, index=False)
    return path


BOX = ["--bbox", "-74,40,-73.5,40.5"]


def test_heatmap_writes_png_and_npy(csv_path, tmp_path):
    out, npy = tmp_path / "h.png", tmp_path / "h.npy"
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "64", *BOX,
                                   "--out", str(out), "--npy", str(npy), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["epsilon"] <= 1.0 and summary["noise"] == "secure" and "exact discrete" in summary["mechanism"]
    agg = np.load(npy)
    assert agg.shape == (64, 64) and agg.min() >= 0 and agg.sum() == pytest.approx(1.0)
    assert out.stat().st_size > 0


@pytest.mark.parametrize("args", [["--epsilon", "0"], ["--epsilon", "1", "--resolution", "100"],
                                  ["--epsilon", "1", "--bbox", "1,2,3"], ["--epsilon", "1", "--user", "nobody"],
                                  ["--epsilon", "1", "--seed", "3"], ["--epsilon", "1", "--noise", "double"]])
def test_heatmap_errors_are_one_line(csv_path, args):
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), *(BOX if "--bbox" not in args else []), *args])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and "error:" in res.output


def test_extent_is_never_taken_from_the_data(csv_path):
    # Issue 12 defect 8: a bounding box derived from the points is a function of the data: refused, not used.
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1"])
    assert res.exit_code == 2 and "public" in res.output and "--bbox" in res.output


def test_printed_release_is_identical_for_neighbouring_data(csv_path, tmp_path):
    # Issue 12 defect 8: what the command prints is DP output + public parameters. Oracle: for neighbouring files
    # (one user's rows removed) with the same simulated noise, the printed summaries are identical; the exact
    # counts appear only under --diagnostics, labelled NOT private.
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(csv_path)
    other = tmp_path / "neighbour.csv"
    frame[frame.user != frame.user.iloc[0]].to_csv(other, index=False)
    args = ["--epsilon", "1", "--resolution", "16", *BOX, "--seed", "3", "--simulation", "--json"]
    a = CliRunner().invoke(app, ["heatmap", str(csv_path), *args])
    b = CliRunner().invoke(app, ["heatmap", str(other), *args])
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    # The default's noisy user count (DP, sensitivity 1) moves by exactly 1 under the same noise; nothing else.
    assert ja.pop("noisy_population") - jb.pop("noisy_population") == 1.0
    rule, _ = ja.pop("w_rule"), jb.pop("w_rule")
    assert ja == jb and ja["count_share"] == "1/10"
    c = CliRunner().invoke(app, ["heatmap", str(csv_path), *args, "--diagnostics"])
    curator = json.loads(c.stdout)["curator_not_private"]
    assert curator["users"] == 60 and curator["points"] == 600 and "NOT private" in curator["label"]
    text = CliRunner().invoke(app, ["heatmap", str(csv_path), *args[:-1]])
    assert "users" not in text.stdout and "600" not in text.stdout
    # How the parameters were chosen and what share of ε that took is printed with the release.
    assert f"parameters: {rule}; 1/10 of ε (ε=0.1) spent on the noisy user count" in text.stdout
    given = CliRunner().invoke(app, ["heatmap", str(csv_path), *args[:-1], "--w", "20"])
    assert "parameters: w = 20 given by the caller, all levels to 4; no ε spent on choosing them" in given.stdout


def test_heatmap_float_noise_is_explicit(csv_path, tmp_path):
    npy = tmp_path / "s.npy"
    args = ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "16", *BOX, "--noise", "float", "--seed", "1",
            "--npy", str(npy), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "idealised real-valued noise" in json.loads(res.stdout)["mechanism"]
    agg = np.load(npy)
    assert agg.shape == (16, 16) and agg.min() >= 0 and agg.sum() == pytest.approx(1.0)


def test_extents_outputs_and_evaluate(csv_path, tmp_path):
    # Issue 16: public extent as a lon/lat box or a centre and size; PNG, CSV, GeoJSON; --evaluate is curator-side.
    out, cells, geo, npy = (tmp_path / n for n in ("m.png", "m.csv", "m.geojson", "m.npy"))
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "16",
                                   "--centre", "-73.75,40.25", "--size", "60000", "--out", str(out), "--csv",
                                   str(cells), "--geojson", str(geo), "--npy", str(npy), "--evaluate", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["size_m"] == 60000.0 and summary["cell_size_m"] == 3750.0
    curator = summary["curator_not_private"]
    assert "NOT private" in curator["label"] and curator["emd_unit"] == "m" and 0 < curator["emd"] < 60000
    assert {"sim", "cc", "kl"} <= set(curator) and "users" not in curator  # counts only with --diagnostics
    truth = np.load(tmp_path / "m.true-NOT-PRIVATE.npy")
    assert truth.sum() == pytest.approx(1.0) and not np.array_equal(truth, np.load(npy))
    assert curator["true_map_file"] == str(tmp_path / "m.true-NOT-PRIVATE.npy")
    assert out.stat().st_size > 0 and cells.read_text().count("\n") == 16 * 16 + 1
    assert json.loads(geo.read_text())["type"] == "FeatureCollection"


def test_metres_extent_needs_columns_and_refuses_geojson(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    path = tmp_path / "m.csv"
    pd.DataFrame({"user": rng.integers(0, 30, 200), "east": rng.random(200) * 900,
                  "north": rng.random(200) * 400}).to_csv(path, index=False)
    base = ["heatmap", str(path), "--epsilon", "1", "--resolution", "8", "--metres-box", "0,0,1000,500"]
    res = CliRunner().invoke(app, [*base, "--xy", "east,north", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["cell_size_m"] == 125.0  # the box padded to a 1000 m square
    for extra, message in ((["--geojson", str(tmp_path / "g.json"), "--xy", "east,north"], "lon/lat extent"),
                           ([], "--xy"), (["--bbox", "-74,40,-73,41", "--xy", "east,north"], "one extent")):
        bad = CliRunner().invoke(app, [*base, *extra])
        assert bad.exit_code == 2 and message in bad.output and "Traceback" not in bad.output


def test_invalid_latitude_in_the_data_is_refused(tmp_path):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "bad.csv"
    pd.DataFrame({"user": [1, 2], "lat": [40.5, 95.0], "lon": [-73.9, -73.8]}).to_csv(path, index=False)
    res = CliRunner().invoke(app, ["heatmap", str(path), "--epsilon", "1", "--resolution", "8", *BOX])
    assert res.exit_code == 2 and "lat must lie in [-90, 90]" in res.output


def test_evaluate_promises_only_the_files_it_writes(csv_path, tmp_path):
    """Issue 31: --evaluate promised *.true-NOT-PRIVATE.* files, which only --npy writes."""
    out = tmp_path / "m.png"
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "16", *BOX,
                                   "--out", str(out), "--evaluate", "--json"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.png", "points.csv"]
    assert "true_map_file" not in json.loads(res.stdout)["curator_not_private"]
    text = CliRunner().invoke(app, ["heatmap", "--help"], env={"COLUMNS": "200"}).output
    assert "--npy a second file beside it" in " ".join(text.split())


def test_points_outside_the_box_name_the_option_that_drops_them(csv_path, tmp_path):
    """Issue 31: the error named the Python keyword drop_outside=True, not the option."""
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "16",
                                   "--bbox", "-74,40,-73.75,40.25", "--out", str(tmp_path / "m.png")])
    assert res.exit_code == 2
    assert "--drop-outside" in res.stderr and "drop_outside" not in res.stderr
    frame = __import__("pandas").read_csv(csv_path)
    outside = int(((frame.lon >= -73.75) | (frame.lat >= 40.25)).sum())  # the box is a square in metres: roughly
    reported = int(res.stderr.split("POINTS ")[1].split(": ")[1].split(" points")[0])
    assert reported > 0 and abs(reported - outside) <= 0.1 * outside
    res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", "--resolution", "16",
                                   "--bbox", "-74,40,-73.75,40.25", "--drop-outside", "--out", str(tmp_path / "m.png")])
    assert res.exit_code == 0, res.output


def test_web_mercator_points_with_tiles_h3_and_geotiff_outputs(csv_path, tmp_path):
    pd = pytest.importorskip("pandas")
    pyproj = pytest.importorskip("pyproj")
    pytest.importorskip("h3")
    rasterio = pytest.importorskip("rasterio")
    frame = pd.read_csv(csv_path)
    to_merc = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    frame["mx"], frame["my"] = to_merc.transform(frame.lon.to_numpy(), frame.lat.to_numpy())
    merc = tmp_path / "merc.csv"
    frame[["user", "mx", "my"]].to_csv(merc, index=False)
    tiles, hexes, tif = tmp_path / "tiles.csv", tmp_path / "h3.csv", tmp_path / "map.tif"
    args = ["heatmap", str(merc), "--epsilon", "1", "--resolution", "16", "--metres-box",
            "-8240000,4860000,-8180000,4940000", "--crs", "EPSG:3857", "--xy", "mx,my", "--w", "20",
            "--tiles", str(tiles), "--h3", str(hexes), "--geotiff", str(tif), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["crs"] == "EPSG:3857" and summary["tiles"] == str(tiles) and summary["h3"] == str(hexes)
    # Web Mercator units are 1/cos(40.2°) ≈ 1.31 ground metres: an 80,000-unit box is about 61 km on the ground.
    assert 60_000 < summary["size_m"] < 62_500
    tile_rows = pd.read_csv(tiles, dtype={"quadkey": str})
    h3_rows = pd.read_csv(hexes)
    for rows, level in ((tile_rows, "z"), (h3_rows, "resolution")):
        totals = rows.groupby(level)["units"].sum()
        assert totals.nunique() == 1 and abs(int(totals.iloc[0]) - 2**40) <= 16 * 16  # rounding: ≤ ½ unit per cell
    # The GeoTIFF in GDAL: the extent's transverse Mercator, 16 cells of size_m / 16, the release's parameters, and
    # its coarsest overview (1 x 1) the exact total of the tiles.
    with rasterio.open(tif) as geo:
        assert geo.crs.to_dict()["proj"] == "tmerc" and geo.transform.a == summary["size_m"] / 16 == -geo.transform.e
        assert json.loads(geo.tags()["DPCLOAK_RELEASE"])["epsilon"] == summary["epsilon"]
        assert geo.read(1).shape == (16, 16) and geo.overviews(1) == [2, 4, 8, 16]
    with rasterio.open(tif, overview_level=3) as top:
        assert top.read(1)[0, 0] * 2**40 == int(totals.iloc[0])
    # Without --crs the box is plain metres: the same call without --xy is refused, as are tiles without lon/lat.
    plain = CliRunner().invoke(app, ["heatmap", str(merc), "--epsilon", "1", "--resolution", "16", "--metres-box",
                                     "-8240000,4860000,-8180000,4940000", "--xy", "mx,my", "--tiles", str(tiles)])
    assert plain.exit_code == 2 and "--tiles needs a lon/lat extent" in plain.output
    unit = CliRunner().invoke(app, ["heatmap", str(merc), "--epsilon", "1", "--xy", "mx,my", "--geotiff", str(tif)])
    assert unit.exit_code == 2 and "--geotiff needs an extent" in unit.output
    lone = CliRunner().invoke(app, ["heatmap", str(merc), "--epsilon", "1", "--crs", "EPSG:3857", *BOX])
    assert lone.exit_code == 2 and "--crs" in lone.output


def test_error_bars_are_printed_and_in_the_json_geojson_and_png(csv_path, tmp_path):
    # The bar (post-processing of the release) is in the text, --json, the GeoJSON properties and the PNG's
    # tEXt metadata (read back with Pillow); refused for other methods and below 9 draws.
    from PIL import Image

    out, geo = tmp_path / "m.png", tmp_path / "m.geojson"
    base = ["heatmap", str(csv_path), "--epsilon", "2", "--resolution", "8", *BOX, "--error-bars", "9"]
    res = CliRunner().invoke(app, [*base, "--out", str(out), "--geojson", str(geo), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    bound = summary["emd_90_unit_square"]
    assert 0 < bound < 2 and summary["emd_90_draws"] == 9 and summary["emd_90_m"] == pytest.approx(
        bound * summary["size_m"])
    assert json.loads(geo.read_text())["properties"]["emd_90_unit_square"] == bound
    assert "nominal 90 %" in Image.open(out).info["Description"]
    text = CliRunner().invoke(app, base)
    assert text.exit_code == 0 and "error bar: EMD ≤" in text.output and "no privacy budget" in text.output
    for bad in (["--error-bars", "5"], ["--error-bars", "9", "--method", "laplace"]):
        res = CliRunner().invoke(app, ["heatmap", str(csv_path), "--epsilon", "1", *BOX, *bad])
        assert res.exit_code == 2 and "--error-bars" in res.output
