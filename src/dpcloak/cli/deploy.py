"""Create and inspect a sensor deployment: configuration, credentials and the guarantee it implies."""

from __future__ import annotations

import math
import time
from pathlib import Path

import typer

from dpcloak.cli._common import cli_errors, console, emit_json
from dpcloak.errors import InvalidParameterError

__all__ = ["deploy_app"]

deploy_app = typer.Typer(help="Create and inspect a sensor deployment (configuration and credentials).",
                         no_args_is_help=True)


@deploy_app.command("init")
@cli_errors
def init(
    directory: str = typer.Argument(..., help="New directory for deployment.json, the keys and the credentials."),
    network: str | None = typer.Option(None, help="A saved SensorNetwork (TOML/JSON, its budget holds for any "
                                       "W consecutive windows); "
                                       "default: a floor plan."),
    width: float = typer.Option(16.0, help="Floor plan: width in metres (sources every metre)."),
    height: float = typer.Option(10.0, help="Floor plan: height in metres."),
    sensor_cols: int = typer.Option(8, help="Floor plan: columns of the people-counter lattice."),
    sensor_rows: int = typer.Option(5, help="Floor plan: rows of the people-counter lattice."),
    epsilon: float = typer.Option(1.0, help="Floor plan: epsilon of one window's readings (all sensors)."),
    delta: float = typer.Option(1e-6, help="Floor plan: delta of one window's readings."),
    budget_epsilon: float = typer.Option(20.0, help="Floor plan: budget epsilon of any W consecutive windows."),
    budget_delta: float = typer.Option(1e-5, help="Floor plan: delta at which the budget is measured."),
    window_seconds: float = typer.Option(60.0, help="Time precision: length of a reporting window in seconds."),
    period_windows: int = typer.Option(1440, help="Policy: the sliding window W ('any W consecutive windows'), "
                                       "over which the network's budget holds."),
    policy_releases: int | None = typer.Option(None, help="Policy: release windows in any W consecutive windows "
                                               "(every ceil(W/k)-th window releases); default: as many as the "
                                               "budget allows, at most W."),
    lifetime_releases: int | None = typer.Option(None, help="Policy: release windows in all since the start "
                                                 "(default: no lifetime cap, the deployment runs for ever)."),
    stride: int | None = typer.Option(None, help="Policy: release every s-th window while the sliding window has "
                                      "room, then skip for budget until it renews (default ceil(W/k): the k release "
                                      "windows spread evenly, never skipping for budget)."),
    clock_skew_seconds: float | None = typer.Option(None, help="How far ahead of real time a sensor's clock may "
                                                    "run (default: one window)."),
    reading_max: float | None = typer.Option(None, help="The most one sensor can read in one window (its physical "
                                             "maximum, in the network's reading unit): readings above it are "
                                             "clipped on the sensor before the noise, and the collector refuses "
                                             "values beyond it plus the noise's tail (422). Default for the floor "
                                             "plan: --max-occupancy people at the counter; required with a "
                                             "--network that declares no upper reading limit."),
    max_occupancy: int | None = typer.Option(None, help="Floor plan: the most people on the floor at once (default: "
                                             "one per square metre); sets the default --reading-max."),
    grace_seconds: float = typer.Option(10.0, help="Late reports are accepted this long after a window ends "
                                        "(sensors send at the end of their window: keep it above the network's "
                                        "delay)."),
    continual_horizon: int | None = typer.Option(None, help="Counts networks: each sensor releases its running "
                                                 "total with the continual counter (matrix factorisation) over this "
                                                 "many release windows, instead of independent noise per window."),
    continual_epsilon: float = typer.Option(1.0, help="The counter's epsilon for one count of one window."),
    continual_delta: float = typer.Option(1e-6, help="The counter's delta."),
    areas: str | None = typer.Option(None, help="Named groups of sensors for running totals per area: "
                                     "'hall=0,1;door=2'."),
) -> None:
    """Write a deployment: public configuration, collector key, analyst token, one credential per sensor."""
    from dpcloak.service import require_service_extra

    require_service_extra()
    from dpcloak.cli._common import check_output_dir
    from dpcloak.sensors import SensorNetwork

    check_output_dir("DIRECTORY", directory)
    for name, value in (("--width", width), ("--height", height)):
        if not (math.isfinite(value) and value > 0):
            raise InvalidParameterError(f"{name} must be a positive number of metres, got {value:g}", parameter=name)
    for name, count in (("--sensor-cols", sensor_cols), ("--sensor-rows", sensor_rows)):
        if count < 1:
            raise InvalidParameterError(f"{name} must be a positive integer, got {count}", parameter=name)
    for name, value in (("--budget-epsilon", budget_epsilon), ("--budget-delta", budget_delta)):
        if not math.isfinite(value):
            raise InvalidParameterError(f"{name} must be a finite number, got {value:g}", parameter=name)
    from dpcloak.service import _network
    from dpcloak.service.config import Deployment, write_deployment

    if reading_max is not None and not (math.isfinite(reading_max) and reading_max > 0):
        raise InvalidParameterError(f"--reading-max must be a positive number, got {reading_max:g}",
                                    parameter="--reading-max")
    if max_occupancy is not None and max_occupancy < 1:
        raise InvalidParameterError(f"--max-occupancy must be a positive integer, got {max_occupancy}",
                                    parameter="--max-occupancy")
    if network is not None:
        net = SensorNetwork.load(Path(network))
        if reading_max is None and net.reading_range[1] is None:
            raise InvalidParameterError(f"the network {network} declares no upper reading limit, so one stolen sensor "
                                        "key could send any value: pass --reading-max (the most one sensor can read "
                                        "in a window)")
    else:
        net = _network.floor_plan_network(width=width, height=height, sensor_cols=sensor_cols, sensor_rows=sensor_rows,
                                          epsilon=epsilon, delta=delta, budget=(budget_epsilon, budget_delta))
        if reading_max is None:  # people counters: the floor's occupancy, everyone where the counter weighs most
            occupancy = math.ceil(width * height) if max_occupancy is None else max_occupancy
            reading_max = _network.occupancy_reading_max(net, occupancy)
    if reading_max is not None:
        net = _network.with_reading_max(net, reading_max)
    dep = Deployment.create(network=net, window_seconds=window_seconds, period_windows=period_windows,
                            start=float(int(time.time())), grace_seconds=grace_seconds,
                            policy_releases=policy_releases, lifetime_releases=lifetime_releases,
                            clock_skew_seconds=clock_skew_seconds, stride=stride,
                            continual=None if continual_horizon is None else {
                                "horizon": continual_horizon, "epsilon": continual_epsilon, "delta": continual_delta},
                            areas=None if areas is None else _areas(areas))
    write_deployment(Path(directory), dep)
    low, high = net.reading_range
    console.print(f"deployment {dep.deployment_id} written to {directory} ({dep.n_sensors} sensor credentials in "
                  f"{Path(directory) / 'sensors'}); readings declared in [{low:g}, {high:g}] {net.reading_unit}; keep "
                  "collector.key and analyst.token secret", highlight=False)


def _areas(text: str) -> dict[str, list[int]]:
    """``"hall=0,1;door=2"`` → ``{"hall": [0, 1], "door": [2]}`` (the deployment validates the sensors)."""
    out: dict[str, list[int]] = {}
    for spec in text.split(";"):
        name, _, sensors = spec.partition("=")
        try:
            out[name.strip()] = [int(j) for j in sensors.split(",")]
        except ValueError:
            raise InvalidParameterError(f"--areas must be NAME=0,1;NAME=2 (sensor indices), got {spec!r}",
                                        parameter="--areas") from None
    return out


@deploy_app.command("show")
@cli_errors
def show(
    directory: str = typer.Argument(..., help="Deployment directory or deployment.json."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
) -> None:
    """Print the deployment's parameters and the guarantee they imply."""
    from dpcloak.service import require_service_extra

    require_service_extra()
    from dpcloak.service.config import load_deployment, schedule_words
    from dpcloak.service.views import deployment_view, guarantee_words, policy_words

    dep = load_deployment(Path(directory))
    view = deployment_view(dep, now=time.time())
    if json_out:
        emit_json({k: v for k, v in view.items() if k not in ("sensor_positions", "source_positions")})
        return
    console.print(f"deployment {dep.deployment_id}  configuration fingerprint {dep.fingerprint}")
    console.print(f"{dep.n_sensors} sensors, windows of {dep.window_seconds:g} s, release windows: "
                  f"{schedule_words(dep)}, at most {dep.releases_per_period} in any {dep.period_windows} "
                  f"consecutive windows, clock skew tolerated {dep.clock_skew_seconds:g} s", highlight=False)
    console.print(policy_words(dep), highlight=False)
    console.print(guarantee_words(dep), highlight=False)


@deploy_app.command("reprovision")
@cli_errors
def reprovision_sensor(
    directory: str = typer.Argument(..., help="Deployment directory (with collector.key)."),
    sensor: int = typer.Option(..., "--sensor", help="The sensor to re-provision."),
) -> None:
    """Retire a sensor's credential (lost or doubtful ledger, copied credential) and write its next generation."""
    from dpcloak.service import require_service_extra

    require_service_extra()
    from dpcloak.service.config import reprovision

    cred = reprovision(Path(directory), sensor=sensor)
    console.print(f"sensor {cred.sensor}: credential generation {cred.generation} written to {cred.path}; every "
                  "older generation is retired (the collector refuses it from its next start or from the new "
                  "credential's first report); start the node with a new --ledger file", highlight=False)
