"""``dpcloak network run``: sensors CSV + counts CSV → a private day (budget checked) → hourly maps."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import typer

from dpcloak.cli._common import cli_errors, console, emit_json, progress_bar, show_progress
from dpcloak.cli._network import NetworkCli, network_options
from dpcloak.errors import InvalidParameterError

__all__ = ["network_app"]

network_app = typer.Typer(help="Sensor networks from coordinates: privatize counts and recover maps.",
                          no_args_is_help=True)


def _where(text: str | None) -> dict[str, str]:
    out = {}
    for item in (text or "").split(",") if text else []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidParameterError(f"--where must look like COLUMN=VALUE, got {item!r}", parameter="--where")
        out[key.strip()] = value.strip()
    return out


def default_ledger(out: Path) -> Path:
    """The budget ledger of ``network run --out OUT`` when ``--ledger`` is not given: ``OUT.ledger``, next to OUT.

    Examples
    --------
    >>> default_ledger(Path("runs/day1")).as_posix()
    'runs/day1.ledger'
    """
    return out.with_name(out.name + ".ledger")


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


@network_app.command("run")
@cli_errors
@network_options
def run(
    *,
    network: NetworkCli,
    counts: str = typer.Option(..., "--counts", help="CSV: label columns, then one column of counts per sensor."),
    where: str | None = typer.Option(None, "--where", help="Keep rows with COLUMN=VALUE[,COLUMN=VALUE…], e.g. a day."),
    alpha: float | None = typer.Option(None, help="Relation radius in --unit (with --sensors)."),
    epsilon: float | None = typer.Option(None, help="Epsilon per release, i.e. per row (with --sensors)."),
    delta: float | None = typer.Option(None, help="Delta per release (with --sensors)."),
    out: str = typer.Option("network-run", help="Output directory."),
    ledger: str | None = typer.Option(None, help="Budget ledger file: what every run of this network has spent "
                                      "(default: <out>.ledger next to --out; give one file to share a budget "
                                      "across output directories). Runs past the budget are refused."),
    uncertainty_draws: int = typer.Option(10, help="Bootstrap draws for each map's EMD uncertainty (0: skip)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar (it is also off when not on a "
                               "terminal)."),
) -> None:
    """Privatize every row of the counts (one release each, budget checked first) and recover one map per row.

    Writes to --out: network.toml (the configuration that fixes the guarantee), private_readings.csv
    (the only data released), maps.csv (the map per source location, with each map's status and
    EMD uncertainty) and maps.png. What the run spends
    is charged, before anything is drawn, to a persistent budget ledger (--ledger, default <out>.ledger
    next to --out, with its key file <out>.ledger.key): running again charges the same budget, and a
    run past it is refused. The ledger is tamper-evident (an edited, older or deleted one is refused).
    """
    from rich.table import Table

    from dpcloak.cli._common import check_output_dir, check_output_file, check_text_file
    from dpcloak.cli.recover import map_rows
    from dpcloak.sensors import read_counts_csv
    from dpcloak.sensors.plot import save_maps
    from dpcloak.sensors.result import misfit_advice, total_misfit

    if uncertainty_draws < 0:
        raise InvalidParameterError(f"--uncertainty-draws must be a non-negative integer, got {uncertainty_draws}",
                                    parameter="--uncertainty-draws")
    rows_kept = _where(where)
    check_text_file("--counts", counts)
    check_output_dir("--out", out)
    ledger_path = check_output_file("--ledger", ledger if ledger is not None else default_ledger(Path(out)))
    from dpcloak.sensors import SensorNetwork

    net = SensorNetwork.from_dict(network.network(epsilon=epsilon, delta=delta, alpha=alpha).to_dict(),
                                  ledger=ledger_path)
    if net.layout is None:
        raise InvalidParameterError("the network has no sensor layout to match the counts file against")
    data = read_counts_csv(counts, net.layout, where=rows_kept)
    try:
        private = net.privatize(data.values)  # one release per row; BudgetExceededError before anything is drawn
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"--counts {counts}: {exc}", parameter="--counts") from None
    maps, previous = [], None
    with progress_bar(show_progress(quiet), "recovering maps") as update:
        for k, row in enumerate(private):
            update(k, len(private), str(data.labels[k]))
            previous = net.recover(row, warm_start=previous, uncertainty_draws=uncertainty_draws)
            maps.append(previous)
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    config = net.save(directory / "network.toml")
    _write_csv(directory / "private_readings.csv", ["period", *net.layout.names],
               [[label, *("" if math.isnan(v) else repr(float(v)) for v in row)]
                for label, row in zip(data.labels, private, strict=True)])
    rows = [{"period": label, "status": res.status, "uncertainty_m": res.uncertainty,
             "uncertainty_90_m": res.uncertainty_90, "uncertainty": res.uncertainty_text, "misfit": res.misfit, **r}
            for label, res in zip(data.labels, maps, strict=True) for r in map_rows(net, res)]
    _write_csv(directory / "maps.csv", list(rows[0]), [list(r.values()) for r in rows])
    picture = save_maps(net, maps, directory / "maps.png", labels=list(data.labels))
    spent = net.spent()
    summary = [{"period": label, "sensors": int(res.present.sum()), net.source_unit: res.total,
                "uncertainty_m": res.uncertainty if math.isfinite(res.uncertainty) else None,
                "uncertainty_90_m": res.uncertainty_90 if math.isfinite(res.uncertainty_90) else None,
                "uncertainty": res.uncertainty_text, "misfit": res.misfit if math.isfinite(res.misfit) else None,
                "status": res.status, "degenerate": res.degenerate, "converged": res.recovery.converged}
               for label, res in zip(data.labels, maps, strict=True)]
    advice = misfit_advice(net, maps)
    if as_json:
        emit_json({"fingerprint": net.fingerprint(), "measurement": net.measurement,
                   "guarantee": net.guarantee_text(), "privacy_unit": net.privacy_unit, "noise": net.noise,
                   "reading_unit": net.reading_unit, "misfit_public_history": net.misfit,
                   "misfit_total": total_misfit(maps), "warning": advice, "sigma": net.sigma,
                   "delta2": net.delta2, "releases": net.releases, "ledger": str(ledger_path),
                   "spent": {"epsilon": spent.epsilon, "delta": spent.delta},
                   "budget": {"epsilon": net.budget[0], "delta": net.budget[1]}, "periods": summary,
                   "files": {"config": str(config), "private": str(directory / "private_readings.csv"),
                             "maps": str(directory / "maps.csv"), "picture": str(picture)}})
        return
    table = Table(title=f"{net.guarantee_text()}; noise: {net.noise} per reading")
    for name in ("period", "sensors", net.source_unit, "EMD uncertainty (median, 90 %)", "misfit", "status"):
        table.add_column(name, justify="left" if name == "period" else "right",
                         min_width=14 if name == "status" else None, no_wrap=name == "status")
    for item in summary:
        unc = str(item["uncertainty"])
        fit = "n/a" if item["misfit"] is None else f"{100 * float(item['misfit']):.2g} %"
        table.add_row(str(item["period"]), str(item["sensors"]), f"{item[net.source_unit]:.0f}", unc, fit,
                      str(item["status"]))
    console.print(table)
    console.print(f"misfit of the maps to the private readings, all periods: {100 * total_misfit(maps):.3g} % of "
                  "their energy unexplained", highlight=False)
    if advice is not None:
        console.print(f"warning: {advice}", style="bold red", highlight=False)
    console.print(f"privacy spent: epsilon={spent.epsilon:.4g} at delta={spent.delta:g} after {net.releases} "
                  f"releases in ledger {ledger_path} (budget epsilon={net.budget[0]:g}); configuration {config} "
                  f"(fingerprint {net.fingerprint()[:16]}…)", highlight=False)
    console.print(f"maps: {picture}, {directory / 'maps.csv'}; released data: {directory / 'private_readings.csv'}",
                  highlight=False)
