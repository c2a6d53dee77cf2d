"""``dpcloak example-data DIR``: write the input files of the README's and the docs' command-line examples."""

from __future__ import annotations

import typer

from dpcloak.cli._common import check_output_dir, cli_errors, console, emit_json
from dpcloak.errors import InvalidParameterError

__all__ = ["example_data"]


@cli_errors
def example_data(
    directory: str = typer.Argument(..., help="Folder to write the files into (created if missing)."),
    force: bool = typer.Option(False, "--force", help="Replace files of the same names."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of text."),
) -> None:
    """Write the example inputs (points.csv, sensors.csv, counts.csv, readings.csv, readings.txt, wind_sites.csv,
    wind.csv) from shipped data.

    The AIS points and the Auckland counters come with the data extra (pip install "dpcloak[data]");
    readings.csv is simulated with a fixed seed; the Irish wind stations and their daily wind speeds ship
    with dpcloak. Run the README's examples inside DIRECTORY.
    """
    from dpcloak.datasets import EXAMPLE_FILES, write_example_data

    check_output_dir("DIRECTORY", directory)
    try:
        data = write_example_data(directory, overwrite=force)
    except InvalidParameterError as exc:
        if exc.parameter != "overwrite":
            raise
        raise InvalidParameterError(f"DIRECTORY {directory}: already holds {', '.join(exc.got)}; add --force to "
                                    "replace them", parameter="--force", got=exc.got) from None
    if as_json:
        emit_json({"directory": str(data.directory), "files": [str(p) for p in data.files]})
        return
    for path in data.files:
        console.print(f"wrote {path}: {EXAMPLE_FILES[path.name]}", highlight=False)
    console.print(f"run the README's command-line examples inside {data.directory}", highlight=False)
