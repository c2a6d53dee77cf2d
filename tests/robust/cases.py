"""The bad-input corpus: CLI command lines and API calls a new user (or a careless script) might try.

``build_cases(directory)`` writes the input files it needs into ``directory`` and returns the cases. Each case
is a dict: ``id``, ``kind`` ("cli" or "api"), ``args`` or ``code``, ``category`` (the issue's classes:
``filesystem``, ``extreme``, ``silent``, ``memory``, ``vocabulary``, ``valid``), ``expect``:

- ``"error"``: a user mistake: exit status 2 and one line ``error: ...`` (API: a ``DpcloakError``) whose text
  names one of ``names`` (the option, column or parameter the user gave);
- ``"ok"``: runs, exit status 0, no NaN or infinity in what it prints (API: a finite result);
- ``"any"``: either of the two (an extreme but legal value: refusing or answering are both fine).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

NAN_INF = ["nan", "inf", "-inf"]


def _cli(cid: str, args: list[str], expect: str, category: str, names: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"id": cid, "kind": "cli", "args": args, "expect": expect, "category": category, "names": list(names)}


def _api(cid: str, code: str, expect: str, category: str, names: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"id": cid, "kind": "api", "code": code, "expect": expect, "category": category, "names": list(names)}


def _write_csv(path: Path, rows: list[list[Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def _fixtures(d: Path) -> dict[str, str]:
    """Input files: good ones (the base of each case) and broken ones."""
    from dpcloak.models.heat import heat_kernel_1d

    model = heat_kernel_1d(30, 12, 0.1)
    pos = [float(p) for p in np.asarray(model.sensor_positions, dtype=float)]
    y = [float(v) for v in model.matvec(np.eye(30)[10]) + 0.01]
    f: dict[str, Path] = {}
    f["readings"] = _write_csv(d / "readings.csv", [["position", "reading"], *[[repr(p), repr(v)] for p, v in
                                                                               zip(pos, y, strict=True)]])
    f["readings_nan"] = _write_csv(d / "readings_nan.csv", [["position", "reading"], *[[repr(p), "nan" if k == 3
                                   else repr(v)] for k, (p, v) in enumerate(zip(pos, y, strict=True))]])
    f["readings_huge"] = _write_csv(d / "readings_huge.csv", [["position", "reading"], *[[repr(p), "1e308"] for p in
                                                                                         pos]])
    f["readings_inf_pos"] = _write_csv(d / "readings_inf_pos.csv", [["position", "reading"], ["inf", "1"]])
    f["readings_one"] = _write_csv(d / "readings_one.csv", [["position", "reading"], [repr(pos[0]), "1.0"]])
    f["readings_header"] = _write_csv(d / "readings_header.csv", [["position", "reading"]])
    f["readings_onecol"] = _write_csv(d / "readings_onecol.csv", [["0.1"], ["0.2"]])
    f["readings_text"] = _write_csv(d / "readings_text.csv", [["position", "reading"], ["a", "b"], ["c", "d"]])
    f["readings_dup"] = _write_csv(d / "readings_dup.csv", [["position", "reading"], *[[repr(pos[0]), "1"]] * 12])
    (d / "empty.csv").write_text("", encoding="utf-8")
    f["empty"] = d / "empty.csv"
    (d / "binary.csv").write_bytes(bytes(range(256)) * 8)
    f["binary"] = d / "binary.csv"
    (d / "latin1.csv").write_bytes("position,reading\n0.1,1\nz\xe9ro,2\n".encode("latin-1"))
    f["latin1"] = d / "latin1.csv"
    (d / "adir").mkdir()
    f["adir"] = d / "adir"
    (d / "exists.txt").write_text("x", encoding="utf-8")
    f["exists"] = d / "exists.txt"
    (d / "exists.csv").write_text("old,content\n", encoding="utf-8")
    f["exists_csv"] = d / "exists.csv"
    rng = np.random.default_rng(0)
    pts = [["user", "x", "y"], *[[f"u{k % 40}", repr(float(a)), repr(float(b))] for k, (a, b) in
                                  enumerate(rng.random((200, 2)) * 0.98)]]
    f["points"] = _write_csv(d / "points.csv", pts)
    f["points_nan"] = _write_csv(d / "points_nan.csv", [*pts[:5], ["u9", "nan", "0.5"], *pts[5:20]])
    f["points_huge"] = _write_csv(d / "points_huge.csv", [*pts[:5], ["u9", "1e308", "0.5"]])
    f["points_outside"] = _write_csv(d / "points_outside.csv", [["user", "x", "y"], ["a", "3", "3"], ["b", "4", "4"]])
    f["points_one"] = _write_csv(d / "points_one.csv", [["user", "x", "y"], ["a", "0.5", "0.5"]])
    f["points_header"] = _write_csv(d / "points_header.csv", [["user", "x", "y"]])
    lonlat = [[f"u{k}", repr(float(174.7 + 0.01 * a)), repr(float(-36.85 + 0.01 * b))]
              for k, (a, b) in enumerate(rng.random((50, 2)))]
    f["points_lonlat"] = _write_csv(d / "points_lonlat.csv", [["user", "lon", "lat"], *lonlat])
    f["points_badlat"] = _write_csv(d / "points_badlat.csv", [["user", "lon", "lat"], ["a", "174.7", "95"]])
    f["points_nouser"] = _write_csv(d / "points_nouser.csv", [["x", "y"], ["0.5", "0.5"]])
    (d / "points.parquet").write_bytes(b"PAR1 this is not parquet")
    f["parquet_bad"] = d / "points.parquet"
    (d / "points.xlsx").write_text("user,x,y\na,0.5,0.5\n", encoding="utf-8")
    f["points_xlsx"] = d / "points.xlsx"
    xy = [[0.0, 0.0], [120.0, 0.0], [240.0, 10.0], [0.0, 130.0], [130.0, 120.0], [250.0, 140.0], [60.0, 260.0],
          [200.0, 250.0]]
    names = [f"s{k}" for k in range(len(xy))]
    f["sensors"] = _write_csv(d / "sensors.csv", [["name", "x", "y"], *[[n, repr(a), repr(b)] for n, (a, b) in
                                                                        zip(names, xy, strict=True)]])
    f["sensors_nan"] = _write_csv(d / "sensors_nan.csv", [["name", "x", "y"], ["a", "nan", "0"], ["b", "1", "1"]])
    f["sensors_one"] = _write_csv(d / "sensors_one.csv", [["name", "x", "y"], ["a", "0", "0"]])
    f["sensors_badlat"] = _write_csv(d / "sensors_badlat.csv", [["name", "lon", "lat"], ["a", "10", "91"],
                                                                ["b", "10", "0"]])
    f["counts"] = _write_csv(d / "counts.csv", [["hour", *names], *[[str(h), *[str(5 + h) for _ in names]] for h in
                                                                     range(3)]])
    f["counts_nan"] = _write_csv(d / "counts_nan.csv", [["hour", *names], ["0", *(["nan"] * len(names))]])
    f["counts_neg"] = _write_csv(d / "counts_neg.csv", [["hour", *names], ["0", *(["-5"] * len(names))]])
    f["counts_huge"] = _write_csv(d / "counts_huge.csv", [["hour", *names], ["0", *(["1e308"] * len(names))]])
    f["counts_other"] = _write_csv(d / "counts_other.csv", [["hour", "zz1", "zz2"], ["0", "1", "2"]])
    (d / "bad.toml").write_text("this is = = not toml [", encoding="utf-8")
    f["bad_toml"] = d / "bad.toml"
    (d / "other.toml").write_text('title = "not a network"\n', encoding="utf-8")
    f["other_toml"] = d / "other.toml"
    (d / "bad.json").write_text("{not json", encoding="utf-8")
    f["bad_json"] = d / "bad.json"
    return {k: str(v) for k, v in f.items()}


def unreadable_and_unwritable(d: Path) -> tuple[str | None, str | None]:
    """A file this process cannot read and a directory it cannot write in (None where none can be made)."""
    secret = d / "secret.csv"
    secret.write_text("position,reading\n0.1,1\n", encoding="utf-8")
    locked = d / "locked"
    locked.mkdir()
    os.chmod(secret, 0)
    os.chmod(locked, 0o500)
    unreadable: str | None = str(secret)
    unwritable: str | None = str(locked)
    if os.geteuid() == 0:  # root reads and writes anyway: look for places the kernel refuses even to root
        unreadable = next((p for p in ("/proc/1/environ", "/proc/self/mem") if _refuses_read(p)), None)
        unwritable = next((p for p in ("/sys", "/proc/1") if _refuses_write(p)), None)
    return unreadable, unwritable


def _refuses_read(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.read(16)
    except OSError:
        return os.path.exists(path)
    return False


def _refuses_write(directory: str) -> bool:
    try:
        with open(os.path.join(directory, "dpcloak-probe.png"), "wb"):
            return False
    except OSError:
        return os.path.isdir(directory)


def cli_cases(d: Path, f: dict[str, str], unreadable: str | None, unwritable: str | None) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    add = cases.append
    out = str(d / "out")

    # --- extreme / malformed numbers, option by option ------------------------------------------------------
    numeric: dict[str, tuple[list[str], list[tuple[str, str]]]] = {
        "sensitivity": (["--json"], [("--n", "int"), ("--m", "int"), ("--t", "pos"), ("--mu", "pos"),
                                     ("--alpha", "pos")]),
        "sensitivity-graph": (["--model", "graph", "--json"], [("--nodes", "int"), ("--tau", "pos"),
                                                                ("--p-in", "prob"), ("--p-out", "prob")]),
        "calibrate": (["--json"], [("--epsilon", "pos"), ("--delta", "prob"), ("--alpha", "pos"), ("--n", "int"),
                                   ("--t", "pos")]),
        "demo": (["--out", out], [("--n", "int"), ("--m", "int"), ("--t", "pos"), ("--epsilon", "pos"),
                                  ("--delta", "prob"), ("--source", "prob"), ("--seed", "seed")]),
        "recover": (["--readings", f["readings"], "--n", "30", "--m", "12", "--sigma", "0.05"],
                    [("--radius", "pos"), ("--failure-probability", "prob"), ("--top", "int0")]),
        "heatmap": ([f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "16", "--noise", "float",
                     "--seed", "1"], [("--epsilon", "pos"), ("--resolution", "pow2"), ("--gamma", "prob"),
                                      ("--population", "pos"), ("--sigma", "pos"), ("--w", "int")]),
        "audit": (["--select", "nothing-matches-this", "--quiet"], [("--seed", "seed")]),
        "reproduce": (["sensor-fig3", "--quick", "--out", str(d / "r0")], [("--trials", "int"), ("--workers", "int"),
                                                                            ("--seed", "seed")]),
    }
    bad: dict[str, list[str]] = {
        "int": ["0", "-1", "abc", "1.5"],
        "int0": ["-1", "abc"],
        "pos": ["nan", "inf", "-inf", "0", "-1", "abc"],
        "prob": ["nan", "-0.5", "1.5", "inf"],
        "pow2": ["0", "-16", "17", "abc"],
        "seed": ["-1", "abc", "1e3"],
    }
    for command, (base, options) in numeric.items():
        argv0 = command.split("-")[0]
        for option, kind in options:
            for value in bad[kind]:
                if command == "sensitivity-graph" and option in ("--p-in", "--p-out"):
                    base_g = [*base, "--graph", "sbm"]
                else:
                    base_g = base
                add(_cli(f"{command}{option}={value}", [argv0, *base_g, option, value], "error", "extreme",
                         (option, option.lstrip("-"))))

    # extreme but legal values: answer (finite) or refuse, never a traceback or a NaN
    legal = [
        ("sensitivity", ["--t", "1e-9", "--json"]), ("sensitivity", ["--t", "1e6", "--json"]),
        ("sensitivity", ["--mu", "1e-300", "--json"]), ("sensitivity", ["--alpha", "1e300", "--json"]),
        ("sensitivity", ["--n", "2", "--m", "1", "--json"]), ("sensitivity", ["--n", "1", "--m", "1", "--json"]),
        ("calibrate", ["--epsilon", "1e300", "--json"]), ("calibrate", ["--epsilon", "1e-300", "--json"]),
        ("calibrate", ["--delta", "1e-300", "--json"]), ("calibrate", ["--delta", "0.999999", "--json"]),
        ("calibrate", ["--epsilon", "1e300", "--calibration", "classic", "--json"]),
        ("calibrate", ["--epsilon", "1e-12", "--calibration", "paper", "--json"]),
        ("calibrate", ["--t", "1e-9", "--json"]), ("calibrate", ["--alpha", "1e300", "--json"]),
        ("demo", ["--out", out, "--epsilon", "1e300"]), ("demo", ["--out", out, "--epsilon", "1e-300"]),
        ("demo", ["--out", out, "--delta", "1e-300"]), ("demo", ["--out", out, "--seed", str(2**64)]),
        ("demo", ["--out", out, "--n", "2", "--m", "1"]), ("demo", ["--out", out, "--t", "1e6"]),
        ("recover", ["--readings", f["readings"], "--n", "30", "--m", "12", "--sigma", "1e300"]),
        ("recover", ["--readings", f["readings"], "--n", "30", "--m", "12", "--sigma", "1e-300"]),
        ("recover", ["--readings", f["readings"], "--n", "30", "--m", "12", "--radius", "1e300"]),
        ("recover", ["--readings", f["readings"], "--n", "30", "--m", "12", "--sigma", "0.1", "--upper", "inf"]),
        ("recover", ["--readings", f["readings"], "--n", "30", "--m", "12", "--sigma", "0.1", "--upper", "1e-300"]),
        ("recover", ["--readings", f["readings"], "--n", "30", "--m", "12", "--sigma", "0.1", "--top", "1000000"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1e300", "--resolution", "16"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1e-300", "--resolution", "16"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "1"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "16", "--population", "1e300"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "16", "--method", "laplace",
                     "--top-percent", "1e-9"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "16", "--method", "dense"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "16", "--w", "100000"]),
        ("heatmap", [f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "16", "--sigma", "1e-12",
                     "--out", str(d / "tiny-sigma.png")]),
    ]
    for k, (command, args) in enumerate(legal):
        add(_cli(f"{command}-legal-{k}", [command, *args], "any", "extreme"))

    # --- memory: estimate up front and refuse (naming the estimate), or use a method that fits -------------------
    for cid, args in [
        ("sensitivity-n1e9", ["sensitivity", "--n", "1000000000", "--json"]),
        ("sensitivity-n1e5-m1e5", ["sensitivity", "--n", "100000", "--m", "100000", "--json"]),
        ("sensitivity-complete-1e5", ["sensitivity", "--model", "graph", "--graph", "complete", "--nodes", "100000",
                                      "--json"]),
        ("sensitivity-path-1e7", ["sensitivity", "--model", "graph", "--graph", "path", "--nodes", "10000000"]),
        ("calibrate-n1e6-m1e6-coprime", ["calibrate", "--n", "1000003", "--m", "999999", "--json"]),
        ("demo-n1e9", ["demo", "--n", "1000000000", "--out", out]),
        ("demo-m1e6-coprime", ["demo", "--n", "1001", "--m", "1000003", "--out", out]),
        ("recover-n1e7", ["recover", "--readings", f["readings"], "--n", "10000000", "--m", "12", "--sigma", "0.1"]),
        ("heatmap-res32768", ["heatmap", f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution", "32768"]),
        ("heatmap-res2e30", ["heatmap", f["points"], "--xy", "x,y", "--epsilon", "1", "--resolution",
                             str(2**30)]),
        ("reproduce-trials1e9", ["reproduce", "sensor-fig3", "--trials", "1000000000", "--out", str(d / "r1")]),
        ("network-k-huge", ["sensitivity", "--sensors", f["sensors"], "--network-model", "graph", "--diffusion",
                            "100", "--alpha", "150", "--k", "1000000000"]),
    ]:
        names = {"heatmap-res2e30": ("--resolution",), "network-k-huge": ("--k",)}.get(cid, ("memory",))
        add(_cli(cid, args, "error", "memory" if names == ("memory",) else "extreme", names))

    # --- file-system problems --------------------------------------------------------------------------------
    readings_base = ["recover", "--n", "30", "--m", "12", "--sigma", "0.05"]
    for name, expect in [("missing", "error"), ("adir", "error"), ("binary", "error"), ("latin1", "error"),
                         ("empty", "error"), ("readings_header", "error"), ("readings_onecol", "error"),
                         ("readings_text", "error"), ("readings_nan", "error"), ("readings_huge", "error"),
                         ("readings_inf_pos", "error"), ("readings_one", "error"), ("readings_dup", "error")]:
        path = str(d / "missing.csv") if name == "missing" else f[name]
        add(_cli(f"recover-readings-{name}", [*readings_base, "--readings", path], expect, "filesystem",
                 ("--readings", "readings", "reading", "position")))
    if unreadable:
        add(_cli("recover-readings-unreadable", [*readings_base, "--readings", unreadable], "error", "filesystem",
                 ("--readings",)))
    good_recover = [*readings_base, "--readings", f["readings"]]
    for cid, target, expect in [("existing-dir", f["adir"], "error"), ("missing-dir", str(d / "no" / "x.csv"),
                                                                          "error"),
                                ("existing-file", f["exists_csv"], "ok")]:
        add(_cli(f"recover-out-{cid}", [*good_recover, "--out", target], expect, "filesystem", ("--out",)))
    if unwritable:
        add(_cli("recover-out-unwritable", [*good_recover, "--out", f"{unwritable}/x.csv"], "error", "filesystem",
                 ("--out",)))

    heat_base = ["heatmap", "--xy", "x,y", "--epsilon", "1", "--resolution", "16"]
    for name, expect in [("missing", "error"), ("adir", "error"), ("binary", "error"), ("latin1", "error"),
                         ("empty", "error"), ("points_header", "error"), ("points_nan", "error"),
                         ("points_huge", "error"), ("points_outside", "error"), ("points_nouser", "error"),
                         ("parquet_bad", "error"), ("points_xlsx", "error"), ("points_one", "ok")]:
        path = str(d / "missing.csv") if name == "missing" else f[name]
        add(_cli(f"heatmap-points-{name}", [heat_base[0], path, *heat_base[1:]], expect, "filesystem",
                 ("POINTS", "points", "x", "user", "column", "file", ".xlsx", "Parquet", "parquet")))
    add(_cli("heatmap-points-outside-dropped", [heat_base[0], f["points_outside"], *heat_base[1:], "--drop-outside"],
             "error", "vocabulary", ("outside", "--drop-outside", "no point")))
    add(_cli("heatmap-points-badlat", ["heatmap", f["points_badlat"], "--epsilon", "1", "--resolution", "16",
                                       "--bbox", "174,-37,175,-36"], "error", "vocabulary", ("lat", "latitude")))
    add(_cli("heatmap-points-one-lonlat", ["heatmap", f["points_one"], "--epsilon", "1", "--resolution", "16",
                                           "--lon", "x", "--lat", "y", "--centre", "174.7,-36.8", "--size", "1000"],
             "error", "vocabulary", ("outside", "--drop-outside", "extent", "--centre", "--lon")))
    if unreadable:
        add(_cli("heatmap-points-unreadable", [heat_base[0], unreadable, *heat_base[1:]], "error", "filesystem",
                 ("POINTS", "points", "ermission", "read")))
    good_heat = [heat_base[0], f["points"], *heat_base[1:]]
    for opt, suffix in [("--out", "png"), ("--csv", "csv"), ("--geojson", "geojson"), ("--npy", "npy")]:
        for cid, target in [("existing-dir", f["adir"]), ("missing-dir", str(d / "no" / f"x.{suffix}"))]:
            extra = ["--bbox", "174,-37,175,-36"] if opt == "--geojson" else []
            base = good_heat if opt != "--geojson" else ["heatmap", f["points_lonlat"], "--epsilon", "1",
                                                         "--resolution", "16"]
            add(_cli(f"heatmap{opt}-{cid}", [*base, *extra, opt, target], "error", "filesystem", (opt,)))
        if unwritable:
            add(_cli(f"heatmap{opt}-unwritable", [*good_heat, opt, f"{unwritable}/x.{suffix}"], "error",
                     "filesystem", (opt,)))
    for suffix in ("csv", "txt", "xyz"):
        add(_cli(f"heatmap--out-ext-{suffix}", [*good_heat, "--out", str(d / f"map.{suffix}")], "error",
                 "filesystem", ("--out",)))
    add(_cli("heatmap--npy-ext", [*good_heat, "--npy", str(d / "map.csv")], "error", "filesystem", ("--npy",)))
    add(_cli("heatmap--out-existing-file", [*good_heat, "--out", str(d / "again.png")], "ok", "filesystem"))
    add(_cli("heatmap--out-svg", [*good_heat, "--out", str(d / "map.svg")], "ok", "filesystem"))

    for cid, target, expect in [("existing-file", f["exists"], "error"), ("missing-parent", str(d / "new" / "deep"),
                                                                            "ok")]:
        add(_cli(f"demo-out-{cid}", ["demo", "--out", target], expect, "filesystem", ("--out",)))
    if unwritable:
        add(_cli("demo-out-unwritable", ["demo", "--out", f"{unwritable}/demo"], "error", "filesystem", ("--out",)))
    add(_cli("reproduce-out-existing-file", ["reproduce", "sensor-fig3", "--quick", "--out", f["exists"]], "error",
             "filesystem", ("--out",)))
    if unwritable:
        add(_cli("reproduce-out-unwritable", ["reproduce", "sensor-fig3", "--quick", "--out", f"{unwritable}/r"],
                 "error", "filesystem", ("--out",)))

    net = ["--sensors", f["sensors"], "--network-model", "heat", "--diffusion", "2500", "--alpha", "150"]
    priv = ["--epsilon", "1", "--delta", "1e-6", "--budget-epsilon", "50", "--budget-delta", "1e-5"]
    for name in ("missing", "adir", "binary", "latin1", "empty", "sensors_nan", "sensors_one", "sensors_badlat",
                 "readings_header"):
        path = str(d / "missing.csv") if name == "missing" else f[name]
        add(_cli(f"sensitivity-sensors-{name}", ["sensitivity", *net[:1], path, *net[2:], "--json"], "error",
                 "filesystem", ("--sensors", "sensor", "lat", "x", "column", "site")))
    for name in ("missing", "adir", "binary", "empty", "counts_nan", "counts_neg", "counts_huge", "counts_other"):
        path = str(d / "missing.csv") if name == "missing" else f[name]
        add(_cli(f"network-counts-{name}", ["network", "run", *net, *priv, "--counts", path, "--out",
                                            str(d / f"net-{name}"), "--uncertainty-draws", "0"], "error",
                 "filesystem", ("--counts", "count", "sensor", "column", "reading")))
    add(_cli("network-out-existing-file", ["network", "run", *net, *priv, "--counts", f["counts"], "--out",
                                           f["exists"], "--uncertainty-draws", "0"], "error", "filesystem",
             ("--out",)))
    add(_cli("network-draws-negative", ["network", "run", *net, *priv, "--counts", f["counts"], "--out",
                                        str(d / "net-neg"), "--uncertainty-draws", "-1"], "error", "extreme",
             ("--uncertainty-draws",)))
    add(_cli("network-where-bad", ["network", "run", *net, *priv, "--counts", f["counts"], "--out",
                                   str(d / "net-where"), "--where", "nonsense"], "error", "vocabulary",
             ("--where",)))
    add(_cli("network-where-nomatch", ["network", "run", *net, *priv, "--counts", f["counts"], "--out",
                                       str(d / "net-where2"), "--where", "hour=99"], "error", "vocabulary",
             ("--where", "hour", "row")))
    for name in ("missing", "adir", "binary", "bad_toml", "other_toml", "bad_json", "empty"):
        path = str(d / "missing.toml") if name == "missing" else f[name]
        add(_cli(f"sensitivity-config-{name}", ["sensitivity", "--config", path], "error", "filesystem",
                 ("--config", "config", "network", "TOML", "JSON", "toml", "json")))
    for opt, value in [("--diffusion", "nan"), ("--diffusion", "-1"), ("--diffusion", "0"), ("--k", "0"),
                       ("--k", "-3"), ("--alpha", "nan"), ("--alpha", "-5"), ("--margin", "nan"),
                       ("--margin", "-1"), ("--spacing", "0"), ("--reading-max", "nan"), ("--reading-max", "-1"),
                       ("--budget-epsilon", "nan"), ("--budget-epsilon", "0"), ("--budget-delta", "2"),
                       ("--unit", "furlongs"), ("--relation", "teleport"), ("--network-model", "magic"),
                       ("--graph-method", "psychic"), ("--sources", "everywhere"), ("--colocated", "maybe")]:
        args = ["calibrate", *net, *priv, "--json"]
        if opt in args:
            i = args.index(opt)
            args[i + 1] = value
        else:
            args += [opt, value]
            if opt == "--spacing":
                args += ["--sources", "grid"]
        add(_cli(f"calibrate-network{opt}={value}", args, "error", "extreme", (opt, opt.lstrip("-"))))

    # deployment commands
    add(_cli("deploy-init-existing-file", ["deploy", "init", f["exists"]], "error", "filesystem",
             ("DIRECTORY", "directory", "exists")))
    if unwritable:
        add(_cli("deploy-init-unwritable", ["deploy", "init", f"{unwritable}/dep"], "error", "filesystem",
                 ("DIRECTORY", "directory", "ermission")))
    for opt, value in [("--width", "nan"), ("--width", "-1"), ("--sensor-cols", "0"), ("--epsilon", "0"),
                       ("--delta", "2"), ("--window-seconds", "0"), ("--period-windows", "0"),
                       ("--grace-seconds", "-1"), ("--budget-epsilon", "inf")]:
        add(_cli(f"deploy-init{opt}={value}", ["deploy", "init", str(d / f"dep{opt}{value}"), opt, value], "error",
                 "extreme", (opt, opt.lstrip("-"))))
    for name in ("missing", "binary", "bad_json", "adir"):
        path = str(d / "missing") if name == "missing" else f[name]
        add(_cli(f"deploy-show-{name}", ["deploy", "show", path], "error", "filesystem",
                 ("DIRECTORY", "deployment", "directory", "JSON", "json")))
    add(_cli("serve-port-range", ["serve", "--demo", "--port", "70000"], "error", "extreme", ("--port", "port")))
    add(_cli("serve-port-negative", ["serve", "--demo", "--port", "-1"], "error", "extreme", ("--port", "port")))
    add(_cli("serve-windows-without-demo", ["serve", "--deployment", str(d / "missing"), "--windows", "3"],
             "error", "silent", ("--windows", "--demo", "--deployment")))
    add(_cli("serve-time-scale-without-demo", ["serve", "--deployment", str(d / "missing"), "--time-scale", "60"],
             "error", "silent", ("--time-scale", "--demo")))
    add(_cli("serve-time-scale-range", ["serve", "--demo", "--time-scale", "0.5"], "error", "extreme",
             ("--time-scale",)))
    add(_cli("sensor-run-missing-config", ["sensor", "run", "--config", str(d / "nope.json"), "--deployment",
                                           str(d / "nope2.json"), "--url", "http://127.0.0.1:9", "--ledger",
                                           str(d / "ledger.json")], "error", "filesystem",
             ("--config", "config", "sensor", "--deployment")))

    # --- silently ignored options and silently wrong results -----------------------------------------------------
    silent = [
        ("heatmap-top-percent-with-pyramid", [*good_heat, "--top-percent", "5"], ("--top-percent",)),
        ("heatmap-w-with-laplace", [*good_heat, "--method", "laplace", "--w", "10"], ("--w",)),
        ("heatmap-gamma-with-laplace", [*good_heat, "--method", "laplace", "--gamma", "0.5"], ("--gamma",)),
        ("heatmap-gamma-with-dense", [*good_heat, "--method", "dense", "--gamma", "0.5"], ("--gamma",)),
        ("heatmap-size-without-centre", [*good_heat, "--size", "100"], ("--size", "--centre")),
        ("heatmap-units-without-out", [*good_heat, "--units", "lonlat"], ("--units", "--out")),
        ("heatmap-sigma-without-out", [*good_heat, "--sigma", "0.01"], ("--sigma", "--out")),
        ("heatmap-bad-method", [*good_heat, "--method", "magic"], ("--method",)),
        ("heatmap-bad-noise", [*good_heat, "--noise", "loud"], ("--noise",)),
        ("heatmap-bad-units", [*good_heat, "--out", str(d / "u.png"), "--units", "feet"], ("--units",)),
        ("heatmap-xy-one-column", ["heatmap", f["points"], "--xy", "x", "--epsilon", "1"], ("--xy",)),
        ("heatmap-xy-unknown-column", ["heatmap", f["points"], "--xy", "a,b", "--epsilon", "1"], ("--xy", "a")),
        ("heatmap-user-unknown-column", [*good_heat, "--user", "who"], ("--user", "who")),
        ("heatmap-bbox-malformed", ["heatmap", f["points_lonlat"], "--epsilon", "1", "--bbox", "1,2,3"],
         ("--bbox",)),
        ("heatmap-bbox-inverted", ["heatmap", f["points_lonlat"], "--epsilon", "1", "--bbox", "175,-36,174,-37"],
         ("--bbox", "lon_min", "lat_min")),
        ("heatmap-bbox-nan", ["heatmap", f["points_lonlat"], "--epsilon", "1", "--bbox", "nan,-37,175,-36"],
         ("--bbox", "lon")),
        ("heatmap-centre-lat-100", ["heatmap", f["points_lonlat"], "--epsilon", "1", "--centre", "174,100",
                                    "--size", "1000"], ("--centre", "lat")),
        ("recover-top-negative", [*good_recover, "--top", "-1"], ("--top",)),
        ("recover-radius-and-sigma", [*readings_base[:5], "--readings", f["readings"], "--radius", "0.1",
                                      "--sigma", "0.1"], ("--radius", "--sigma")),
        ("recover-no-sigma-no-radius", [*readings_base[:5], "--readings", f["readings"]], ("--sigma", "--radius")),
        ("recover-bad-policy", [*good_recover, "--radius-policy", "guess"], ("--radius-policy",)),
        ("recover-bad-solver", [*good_recover, "--solver", "magic"], ("--solver",)),
        ("recover-upper-negative", [*good_recover, "--upper", "-1"], ("--upper",)),
        ("recover-upper-nan", [*good_recover, "--upper", "nan"], ("--upper",)),
        ("recover-png-without-network", [*good_recover, "--png", str(d / "x.png")], ("--png",)),
        ("recover-model-mismatch", ["recover", "--readings", f["readings"], "--n", "30", "--m", "13", "--sigma",
                                    "0.1"], ("--m", "sensor", "reading")),
        ("sensitivity-graph-option-with-heat1d", ["sensitivity", "--nodes", "50"], ("--nodes", "--model")),
        ("sensitivity-heat-option-with-graph", ["sensitivity", "--model", "graph", "--t", "0.5"], ("--t",
                                                                                                    "--model")),
        ("sensitivity-pin-with-complete", ["sensitivity", "--model", "graph", "--graph", "complete", "--p-in",
                                           "0.3"], ("--p-in", "--graph")),
        ("sensitivity-bad-model", ["sensitivity", "--model", "cubic"], ("--model",)),
        ("sensitivity-bad-graph", ["sensitivity", "--model", "graph", "--graph", "torus"], ("--graph",)),
        ("calibrate-bad-calibration", ["calibrate", "--calibration", "vibes"], ("--calibration",)),
        ("calibrate-periods-synthetic", ["calibrate", "--periods", "3"], ("--periods",)),
        ("demo-source-out-of-range", ["demo", "--source", "2", "--out", out], ("--source",)),
        ("reproduce-no-experiment", ["reproduce"], ("experiment", "--list")),
        ("reproduce-unknown", ["reproduce", "fig-99"], ("fig-99", "experiment")),
        ("reproduce-workers-with-scheduler", ["reproduce", "sensor-fig3", "--quick", "--workers", "3",
                                              "--scheduler", "tcp://127.0.0.1:9", "--out", str(d / "r2")],
         ("--workers", "--scheduler")),
        ("reproduce-list-with-experiment", ["reproduce", "sensor-fig3", "--list"], ("--list",)),
        ("reproduce-list-with-trials", ["reproduce", "--list", "--trials", "5"], ("--list", "--trials")),
        ("audit-select-nothing", ["audit", "--select", "zzzz-no-such", "--quiet"], ("--select",)),
        ("network-run-no-counts-match", ["network", "run", *net, *priv, "--counts", f["counts_other"], "--out",
                                         str(d / "nm")], ("--counts", "sensor", "column")),
        ("sensitivity-network-and-model", ["sensitivity", *net, "--n", "50"], ("--model", "--n")),
        ("sensitivity-network-option-alone", ["sensitivity", "--diffusion", "100"], ("--diffusion",
                                                                                      "--sensors")),
        ("calibrate-config-and-sensors", ["calibrate", "--config", f["other_toml"], *net], ("--config",
                                                                                            "--sensors")),
        ("unknown-command", ["frobnicate"], ("frobnicate", "command")),
        ("unknown-option", ["sensitivity", "--frobnicate", "3"], ("--frobnicate",)),
        ("missing-value", ["sensitivity", "--n"], ("--n",)),
    ]
    for cid, args, names in silent:
        add(_cli(cid, args, "error", "silent", names))

    # --- valid runs whose output must be finite (and must not be silently wrong) ---------------------------------
    valid = [
        ("demo-tiny-t", ["demo", "--t", "0.001", "--out", out]),
        ("demo-out-dir", ["demo", "--out", str(d / "demo-dir")]),
        ("demo-json", ["demo", "--out", out, "--json"]),
        ("sensitivity-default", ["sensitivity", "--json"]),
        ("sensitivity-table", ["sensitivity"]),
        ("sensitivity-graph-star", ["sensitivity", "--model", "graph", "--graph", "star", "--nodes", "30"]),
        ("sensitivity-graph-complete", ["sensitivity", "--model", "graph", "--graph", "complete", "--nodes", "30"]),
        ("calibrate-default", ["calibrate"]),
        ("recover-good", good_recover),
        ("recover-good-json", [*good_recover, "--json", "--out", str(d / "est.csv")]),
        ("heatmap-good", [*good_heat, "--json"]),
        ("heatmap-good-out", [*good_heat, "--out", str(d / "map.png"), "--csv", str(d / "cells.csv")]),
        ("heatmap-laplace-top", [*good_heat, "--method", "laplace", "--top-percent", "5"]),
        ("sensitivity-network", ["sensitivity", *net, "--json"]),
        ("calibrate-network", ["calibrate", *net, *priv]),
        ("reproduce-list", ["reproduce", "--list"]),
        ("version", ["--version"]),
        ("help", ["--help"]),
    ]
    for cid, args in valid:
        add(_cli(cid, args, "ok", "valid"))
    return cases


def api_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    add = cases.append
    values = {"nan": "float('nan')", "inf": "float('inf')", "neg": "-1.0", "zero": "0.0", "str": "'abc'",
              "none": "None"}
    calls = {
        "GaussianMechanism": ("from dpcloak.privacy import GaussianMechanism\n"
                              "result = GaussianMechanism(epsilon={epsilon}, delta={delta}, sensitivity={sensitivity})"
                              ".sigma", {"epsilon": "1.0", "delta": "1e-5", "sensitivity": "1.0"}),
        "LaplaceMechanism": ("from dpcloak.privacy import LaplaceMechanism\n"
                             "result = LaplaceMechanism(epsilon={epsilon}, sensitivity={sensitivity}).scale",
                             {"epsilon": "1.0", "sensitivity": "1.0"}),
        "DiscreteLaplaceMechanism": ("from dpcloak.privacy import DiscreteLaplaceMechanism\n"
                                     "result = DiscreteLaplaceMechanism(epsilon={epsilon}, sensitivity={sensitivity},"
                                     " resolution={resolution}).privatize([1.0])",
                                     {"epsilon": "1.0", "sensitivity": "1.0", "resolution": "0.01"}),
        "DiscreteGaussianMechanism": ("from dpcloak.privacy import DiscreteGaussianMechanism\n"
                                      "result = DiscreteGaussianMechanism(epsilon={epsilon}, delta={delta}, "
                                      "sensitivity={sensitivity}).privatize([1.0])",
                                      {"epsilon": "1.0", "delta": "1e-5", "sensitivity": "1.0"}),
        "gaussian_delta": ("from dpcloak.privacy import gaussian_delta\n"
                           "result = gaussian_delta(epsilon={epsilon}, sigma={sigma}, sensitivity={sensitivity})",
                           {"epsilon": "1.0", "sigma": "1.0", "sensitivity": "1.0"}),
        "gaussian_epsilon": ("from dpcloak.privacy import gaussian_epsilon\n"
                             "result = gaussian_epsilon(delta={delta}, sigma={sigma}, sensitivity={sensitivity})",
                             {"delta": "1e-5", "sigma": "1.0", "sensitivity": "1.0"}),
        "zcdp_epsilon": ("from dpcloak.privacy import zcdp_epsilon\nresult = zcdp_epsilon(rho={rho}, delta={delta})",
                         {"rho": "0.5", "delta": "1e-5"}),
        "composed_epsilon": ("from dpcloak.privacy import GaussianMechanism, composed_epsilon\n"
                             "m = GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0)\n"
                             "result = composed_epsilon(m, readings={readings}, delta={delta})",
                             {"readings": "10", "delta": "1e-5"}),
        "heat_kernel_1d": ("from dpcloak.models import heat_kernel_1d\n"
                           "result = heat_kernel_1d({n}, {m}, {t}, mu={mu}).todense()",
                           {"n": "20", "m": "10", "t": "0.1", "mu": "0.5"}),
        "l2_sensitivity": ("from dpcloak.models import heat_kernel_1d\nfrom dpcloak.privacy import l2_sensitivity\n"
                           "result = l2_sensitivity(heat_kernel_1d(20, 10, 0.1), alpha={alpha})", {"alpha": "1.0"}),
        "emd": ("import numpy as np\nfrom dpcloak.metrics import emd\nfrom dpcloak.domains import Line\n"
                "result = emd(np.array([{p}, 1.0, 0.0]), np.array([0.0, 1.0, {q}]), Line(3))", {"p": "1.0",
                                                                                                 "q": "1.0"}),
        "bpdn": ("import numpy as np\nfrom dpcloak.models import heat_kernel_1d\nfrom dpcloak.recovery import bpdn\n"
                 "M = heat_kernel_1d(20, 10, 0.1)\ny = M.matvec(np.eye(20)[5]) + {shift}\n"
                 "result = bpdn(M, y, sigma={sigma}, failure_probability={failure_probability}).x",
                 {"shift": "0.0", "sigma": "0.05", "failure_probability": "0.05"}),
        "choose_radius": ("from dpcloak.recovery import choose_radius\n"
                          "result = choose_radius(m={m}, sigma={sigma}, failure_probability={failure_probability})"
                          ".radius", {"m": "10", "sigma": "0.1", "failure_probability": "0.05"}),
        "private_heatmap": ("import numpy as np\nfrom dpcloak.heatmaps import private_heatmap\n"
                            "r = np.random.default_rng(0)\n"
                            "result = private_heatmap(np.arange(50) % 9, r.random(50) * {scale}, r.random(50), "
                            "epsilon={epsilon}, resolution={resolution}, rng=0, noise='float').aggregate",
                            {"scale": "0.99", "epsilon": "1.0", "resolution": "16"}),
        "render": ("import numpy as np\nfrom dpcloak.heatmaps import render\n"
                   "result = render(np.full((8, 8), 1 / 64), sigma={sigma})", {"sigma": "0.05"}),
        "Extent.around": ("from dpcloak.heatmaps import Extent\nresult = Extent.around(lon={lon}, lat={lat}, "
                          "size={size}).size", {"lon": "174.7", "lat": "-36.8", "size": "1000.0"}),
        "LocalProjection": ("from dpcloak.geo import LocalProjection\n"
                            "result = LocalProjection(lon0={lon0}, lat0={lat0}).forward(174.7, -36.8)",
                            {"lon0": "174.7", "lat0": "-36.8"}),
        "laplace_scale": ("import numpy as np\nfrom dpcloak.privacy.fisher import laplace_scale\n"
                          "result = laplace_scale(epsilon={epsilon}, weights=np.ones(3), low={low}, high={high})",
                          {"epsilon": "1.0", "low": "-1.0", "high": "1.0"}),
        "Relation.move": ("from dpcloak.sensors import Relation\nresult = Relation.move({alpha}).alpha",
                          {"alpha": "10.0"}),
        "total_variation": ("import numpy as np\nfrom dpcloak.audit import total_variation\n"
                            "result = total_variation(np.array([{p}, 0.5]), np.array([0.5, 0.5]))", {"p": "0.5"}),
    }
    legal_zero = {"epsilon@gaussian_delta", "rho", "readings", "p", "q", "shift", "scale", "lon", "lat", "lon0",
                  "lat0", "low", "high", "sigma@render",
                  "delta@zcdp_epsilon", "delta@composed_epsilon"}  # (ε at δ = 0 is honestly infinite there)
    legal_neg = {"lon", "lat", "lon0", "lat0", "low", "shift", "p", "q"}
    for fname, (template, defaults) in calls.items():
        for param in defaults:
            for label, value in values.items():
                if label == "none" and param not in ("sigma",):
                    continue
                if label == "zero" and (param in legal_zero or f"{param}@{fname}" in legal_zero):
                    continue
                if label == "neg" and param in legal_neg:
                    continue
                if param in ("shift", "scale", "p", "q") and label in ("zero", "str"):
                    continue  # the case's own arithmetic, not the library's input
                args = {**defaults, param: value}
                names = {"shift": ("y",), "scale": ("x",), "p": ("p", "P"), "q": ("q",)}.get(param, (param,))
                add(_api(f"{fname}({param}={label})", template.format(**args), "error", "extreme", names))
    legal_extremes = [
        ("GaussianMechanism-eps-1e300", "from dpcloak.privacy import GaussianMechanism\n"
         "result = GaussianMechanism(epsilon=1e300, delta=1e-5, sensitivity=1.0).sigma"),
        ("GaussianMechanism-delta-1e-300", "from dpcloak.privacy import GaussianMechanism\n"
         "result = GaussianMechanism(epsilon=1.0, delta=1e-300, sensitivity=1.0).sigma"),
        ("DiscreteLaplace-1e308", "from dpcloak.privacy import DiscreteLaplaceMechanism\n"
         "result = DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=1.0).privatize([1e308])"),
        ("DiscreteGaussian-1e-300", "from dpcloak.privacy import DiscreteGaussianMechanism\n"
         "result = DiscreteGaussianMechanism(epsilon=1e-300, delta=1e-300, sensitivity=1.0).privatize([0.0])"),
        ("Laplace-1e308", "from dpcloak.privacy import LaplaceMechanism\n"
         "result = LaplaceMechanism(epsilon=1.0, sensitivity=1.0).privatize([1e308], rng=0)"),
        ("composed-1e12", "from dpcloak.privacy import GaussianMechanism, composed_epsilon\n"
         "m = GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0)\n"
         "result = composed_epsilon(m, readings=10**12, delta=1e-5)"),
        ("accountant-charge-1e9", "from dpcloak.privacy import GaussianMechanism, ReadingAccountant\n"
         "a = ReadingAccountant(mechanism=GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0))\n"
         "result = a.charge(10**9).epsilon"),
        ("accountant-charge-1e15", "from dpcloak.privacy import GaussianMechanism, ReadingAccountant\n"
         "a = ReadingAccountant(mechanism=GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0))\n"
         "result = a.charge(10**15).epsilon"),
        ("zcdp-huge-rho", "from dpcloak.privacy import zcdp_epsilon\nresult = zcdp_epsilon(rho=1e300, delta=1e-5)"),
        ("gaussian-delta-tiny-sigma", "from dpcloak.privacy import gaussian_delta\n"
         "result = gaussian_delta(epsilon=1.0, sigma=1e-300, sensitivity=1.0)"),
        ("gaussian-epsilon-huge-sigma", "from dpcloak.privacy import gaussian_epsilon\n"
         "result = gaussian_epsilon(delta=1e-5, sigma=1e300, sensitivity=1.0)"),
        ("emd-all-zero", "import numpy as np\nfrom dpcloak.metrics import emd\nfrom dpcloak.domains import Line\n"
         "result = emd(np.zeros(5), np.ones(5), Line(5))"),
        ("emd-huge", "import numpy as np\nfrom dpcloak.metrics import emd\nfrom dpcloak.domains import Line\n"
         "result = emd(np.array([1e308, 1e308]), np.array([1.0, 0.0]), Line(2))"),
        ("heat1d-tiny-t", "from dpcloak.models import heat_kernel_1d\n"
         "result = heat_kernel_1d(50, 20, 1e-12).todense()"),
        ("bpdn-huge-y", "import numpy as np\nfrom dpcloak.models import heat_kernel_1d\n"
         "from dpcloak.recovery import bpdn\nresult = bpdn(heat_kernel_1d(20, 10, 0.1), np.full(10, 1e300), "
         "sigma=0.1).x"),
        ("bpdn-zero-y", "import numpy as np\nfrom dpcloak.models import heat_kernel_1d\n"
         "from dpcloak.recovery import bpdn\nresult = bpdn(heat_kernel_1d(20, 10, 0.1), np.zeros(10), sigma=0.1).x"),
        ("render-tiny-sigma", "import numpy as np\nfrom dpcloak.heatmaps import render\n"
         "result = render(np.full((8, 8), 1 / 64), sigma=1e-300)"),
        ("adp-tester-no-budget", "from dpcloak.audit import adp_tester, ACCEPT\nimport numpy as np\n"
         "s = lambda k, rng: rng.integers(0, 2, size=k)\n"
         "r = adp_tester(s, s, n=2, epsilon=1.0, delta=0.1, budget=1e-12, rng=0)\n"
         "assert not (r.verdict == ACCEPT and r.queries == 0), r\nresult = r.queries"),
    ]
    for cid, code in legal_extremes:
        add(_api(cid, code, "any", "extreme"))
    for cid, code in [
        ("heat1d-n1e7", "from dpcloak.models import heat_kernel_1d\nresult = heat_kernel_1d(10**7, 1000, 0.1)"
                        ".todense()"),
        ("heat1d-n1e5-m1e5", "from dpcloak.models import heat_kernel_1d\nresult = heat_kernel_1d(10**5, 10**5, 0.1)"
                             ".todense()"),
        ("l2-n1e5-m1e5-coprime", "from dpcloak.models import heat_kernel_1d\n"
                                 "from dpcloak.privacy import l2_sensitivity\n"
                                 "result = l2_sensitivity(heat_kernel_1d(100003, 99991, 0.1))"),
        ("bound-users-32768", "import numpy as np\nfrom dpcloak.heatmaps import bound_users\n"
                              "result = bound_users(np.arange(10), np.full(10, 0.5), np.full(10, 0.5), "
                              "resolution=32768).counts.shape"),
        ("private-heatmap-32768", "import numpy as np\nfrom dpcloak.heatmaps import private_heatmap\n"
                                  "result = private_heatmap(np.arange(10), np.full(10, 0.5), np.full(10, 0.5), "
                                  "epsilon=1.0, resolution=32768, noise='float', rng=0).aggregate"),
        ("heat1d-n1e6-m1e6-coprime", "from dpcloak.models import heat_kernel_1d\n"
         "result = heat_kernel_1d(1000003, 999999, 0.1)"),
        ("heat1d-n1e9-fft", "from dpcloak.models import heat_kernel_1d\n"
         "result = heat_kernel_1d(10**9, 5 * 10**8, 0.1)"),
    ]:
        add(_api(cid, code, "error", "memory", ("memory",)))
    vocabulary = [
        ("emd-length-mismatch", "import numpy as np\nfrom dpcloak.metrics import emd\nfrom dpcloak.domains import "
         "Line\nresult = emd(np.ones(3), np.ones(4), Line(3))", ("q", "p", "length", "shape")),
        ("bpdn-wrong-length", "import numpy as np\nfrom dpcloak.models import heat_kernel_1d\n"
         "from dpcloak.recovery import bpdn\nresult = bpdn(heat_kernel_1d(20, 10, 0.1), np.ones(7), sigma=0.1)",
         ("y",)),
        ("bpdn-nan-reading", "import numpy as np\nfrom dpcloak.models import heat_kernel_1d\n"
         "from dpcloak.recovery import bpdn\ny = np.ones(10)\ny[2] = np.nan\n"
         "result = bpdn(heat_kernel_1d(20, 10, 0.1), y, sigma=0.1)", ("y",)),
        ("line-zero", "from dpcloak.domains import Line\nresult = Line(0)", ("n",)),
        ("grid-negative", "from dpcloak.domains import Grid\nresult = Grid((-1, 3))", ("shape",)),
        ("sites-nan", "import numpy as np\nfrom dpcloak.domains import Sites\n"
         "result = Sites(np.array([[np.nan, 0.0]]))",
         ("positions",)),
        ("check-lonlat-91", "from dpcloak.geo import check_lonlat\nresult = check_lonlat([0.0], [91.0])", ("lat",)),
        ("bound-users-outside", "import numpy as np\nfrom dpcloak.heatmaps import bound_users\n"
         "result = bound_users(np.arange(3), np.array([0.5, 2.0, 0.1]), np.full(3, 0.5), resolution=8)",
         ("x", "[0, 1)")),
        ("private-heatmap-empty", "import numpy as np\nfrom dpcloak.heatmaps import private_heatmap\n"
         "result = private_heatmap([], [], [], epsilon=1.0, resolution=8)", ("users", "x", "empty", "no point")),
        ("accountant-negative-charge", "from dpcloak.privacy import GaussianMechanism, ReadingAccountant\n"
         "a = ReadingAccountant(mechanism=GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0))\n"
         "result = a.charge(-3)", ("count",)),
        ("run-experiment-unknown", "from dpcloak.experiments import run_experiment\n"
         "result = run_experiment('nope-99', quick=True)", ("nope-99", "experiment")),
        ("graph-diffusion-negative-tau", "import networkx as nx\nfrom dpcloak.models import graph_diffusion\n"
         "result = graph_diffusion(nx.path_graph(5), -1.0)", ("tau",)),
        ("proximity-k-zero", "import numpy as np\nfrom dpcloak.domains import proximity_graph\n"
         "result = proximity_graph(np.random.default_rng(0).random((6, 2)), k=0)", ("k",)),
        ("matrix-model-nan", "import numpy as np\nfrom dpcloak.models import matrix_model\n"
         "result = matrix_model(np.array([[1.0, np.nan]]))", ("matrix",)),
    ]
    for cid, code, names in vocabulary:
        add(_api(cid, code, "error", "vocabulary", names))
    return cases


def build_cases(directory: Path) -> list[dict[str, Any]]:
    files = _fixtures(directory)
    unreadable, unwritable = unreadable_and_unwritable(directory)
    cases = cli_cases(directory, files, unreadable, unwritable) + api_cases()
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    (directory / "cases.json").write_text(json.dumps(cases, indent=1), encoding="utf-8")
    return cases
