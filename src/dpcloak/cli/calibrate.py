"""``dpcloak calibrate``: Δ2 and the Gaussian noise σ of a synthetic model, or a sensor network's mechanism."""

from __future__ import annotations

from typing import Any

import typer

from dpcloak.cli._common import SyntheticModel, cli_errors, console, emit_json, model_options
from dpcloak.cli._network import NetworkCli, network_options
from dpcloak.errors import InvalidParameterError


def _row(calibration: str, *, epsilon: float, delta: float, delta2: float) -> dict[str, Any]:
    """σ of one calibration, or the reason it is refused."""
    from dpcloak.privacy.mechanisms import GaussianMechanism

    try:
        mech = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=delta2, calibration=calibration)
    except InvalidParameterError as exc:
        return {"calibration": calibration, "sigma": None, "refused": str(exc)}
    return {"calibration": calibration, "sigma": mech.sigma, "refused": None}


def _network_calibration(network: NetworkCli, *, alpha: float | None, epsilon: float | None, delta: float | None,
                         periods: int, as_json: bool) -> None:
    from rich.table import Table

    net = network.network(epsilon=epsilon, delta=delta, alpha=alpha)
    after = net.guarantee(periods)
    payload = {
        "measurement": net.measurement, "relation": None if net.relation is None else net.relation.to_dict(),
        "privacy_unit": net.privacy_unit, "guarantee": net.guarantee_text(), "reading_unit": net.reading_unit,
        "n_sensors": net.n_sensors, "n_sources": net.n_sources,
        "epsilon": net.epsilon, "delta": net.delta, "delta2": net.delta2, "sigma": net.sigma,
        "resolution": net.resolution, "mechanism": f"{net.noise} (OS CSPRNG)",
        "budget": {"epsilon": net.budget[0], "delta": net.budget[1]}, "max_releases": net.max_releases(),
        "after": {"releases": periods, "epsilon": after.epsilon, "delta": after.delta},
        "fingerprint": net.fingerprint() if net.layout is not None else None,
    }
    if as_json:
        emit_json(payload)
        return
    unit = net.reading_unit
    table = Table(title=net.guarantee_text())
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("sensors / source locations", f"{net.n_sensors} / {net.n_sources}")
    table.add_row(f"Δ2 (exact, {unit})", f"{net.delta2:.6g}")
    table.add_row("noise per reading", net.noise)
    table.add_row(f"grid of released values ({unit})", f"{net.resolution:.3g}")
    table.add_row(f"after {periods} releases", f"epsilon={after.epsilon:.4g} at delta={after.delta:g}")
    table.add_row("budget", f"epsilon={net.budget[0]:g} at delta={net.budget[1]:g}: {net.max_releases()} releases")
    console.print(table)


@cli_errors
@model_options
@network_options
def calibrate(
    *,
    spec: SyntheticModel,
    network: NetworkCli,
    alpha: float | None = typer.Option(
        None, help="Relation radius: in --unit for a network (--sensors/--config); in steps for --model (default 1)."
    ),
    epsilon: float | None = typer.Option(None, help="Privacy parameter epsilon > 0 per release (default 1)."),
    delta: float | None = typer.Option(None, help="Privacy parameter delta in (0, 1) per release (default 0.1)."),
    calibration: str | None = typer.Option(
        None, help="analytic, classic or paper (default: show all three; JSON reports analytic)."
    ),
    periods: int = typer.Option(24, help="Network: show the composed guarantee after this many releases."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON object instead of a table."),
) -> None:
    """Noise sigma of the local Gaussian mechanism for a model, or of a sensor network's exact mechanism."""
    if network.given:
        if spec != SyntheticModel() or calibration is not None:
            raise InvalidParameterError("--model, its options and --calibration are for synthetic models; a network "
                                        "uses the exact discrete Gaussian", parameter="--model")
        _network_calibration(network, alpha=alpha, epsilon=epsilon, delta=delta, periods=periods, as_json=as_json)
        return
    network.require_absent()
    if periods != 24:
        raise InvalidParameterError("--periods is for a network (--sensors or --config)", parameter="--periods")
    from rich.table import Table

    from dpcloak._validation import check_choice
    from dpcloak.privacy.mechanisms import GAUSSIAN_CALIBRATIONS, GaussianMechanism
    from dpcloak.privacy.sensitivity import l2_sensitivity

    steps = 1.0 if alpha is None else alpha
    eps = 1.0 if epsilon is None else epsilon
    dlt = 0.1 if delta is None else delta
    if calibration is not None:
        check_choice("--calibration", calibration, GAUSSIAN_CALIBRATIONS)
    built, description = spec.build()
    delta2 = l2_sensitivity(built, alpha=steps)
    if calibration is not None:
        # a single requested calibration that is refused is an error (exit status 2)
        mech = GaussianMechanism(epsilon=eps, delta=dlt, sensitivity=delta2, calibration=calibration)
        rows = [{"calibration": calibration, "sigma": mech.sigma, "refused": None}]
    else:
        GaussianMechanism(epsilon=eps, delta=dlt, sensitivity=delta2)  # validates epsilon and delta
        rows = [_row(c, epsilon=eps, delta=dlt, delta2=delta2) for c in GAUSSIAN_CALIBRATIONS]
    if as_json:
        emit_json({"model": description, "alpha": steps, "epsilon": eps, "delta": dlt, "delta2": delta2,
                   "calibration": rows[0]["calibration"], "sigma": rows[0]["sigma"], "calibrations": rows})
        return
    table = Table(title=f"{description}; epsilon={eps:g}, delta={dlt:g}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("Δ2 (exact)", f"{delta2:.6g}")
    for row in rows:
        value = f"{row['sigma']:.6g}" if row["sigma"] is not None else f"refused: {row['refused']}"
        table.add_row(f"σ ({row['calibration']})", value)
    console.print(table)
