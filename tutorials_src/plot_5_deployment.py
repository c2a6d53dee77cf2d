"""
Deploying sensors and the collector
===================================

*For the engineer who installs the counters and runs the server.* Seed 000 §1 describes a system:
lightweight sensors make each reading private **before it leaves them**, send it over an untrusted
channel to a central node, and the analyst recovers roughly where people are, window after window.
:mod:`dpcloak.service` is that system:

* ``dpcloak deploy init`` fixes the deployment's public parameters (the sensor network, the window
  length, the budget and its release policy) and writes one credential per sensor;
* each **sensor node** (:class:`~dpcloak.service.node.SensorNode`, or ``dpcloak sensor run``)
  privatizes its reading with the exact discrete Gaussian from the OS CSPRNG, enforces its own budget
  with a persistent ledger, signs the report and sends it;
* the **collector** (``dpcloak serve``) authenticates and de-duplicates reports, stores them in
  SQLite or PostgreSQL, recovers each window's map when it closes, and serves the dashboard.

Everything below runs for real while the documentation is built: a collector process listening on
127.0.0.1 only, 24 sensor nodes in this process, six one-second windows; then the collector is
stopped. The design and the threat model are in :doc:`/service`.
"""

# %%
# Creating the deployment
# -----------------------
# ``dpcloak deploy init`` writes a directory: ``deployment.json`` (public), ``collector.key`` and
# ``analyst.token`` (secret, mode 0600) and ``sensors/sensor-<j>.json``, the credential to install on
# sensor *j*. Without ``--network`` it lays out a floor plan: people counters on a lattice over a
# 12 m × 8 m room with a source location every metre. Windows of 1 s keep this page fast; a real
# deployment uses minutes. The budget ε = 3 holds for any 9 consecutive windows (``--period-windows
# 9``: the nine window releases it allows), so every window is a release window and the node's
# enforcement of the public release policy can be watched below.
import atexit
import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import matplotlib.pyplot as plt
import numpy as np
from typer.testing import CliRunner

from dpcloak.cli import app
from dpcloak.errors import DpcloakError, LedgerIntegrityError
from dpcloak.service.config import load_credential, load_deployment
from dpcloak.service.node import SensorNode
from dpcloak.service.server import dashboard_url

workdir = Path(tempfile.mkdtemp(prefix="dpcloak-tutorial-"))
site = workdir / "site"


def dpcloak(*args):
    """Run a ``dpcloak`` command line in this process and show what it printed."""
    done = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    if done.exit_code:
        raise RuntimeError(done.output)
    print(done.output.strip().replace(str(workdir), "<workdir>"))


dpcloak("deploy", "init", str(site), "--width", "12", "--height", "8", "--sensor-cols", "6", "--sensor-rows", "4",
        "--window-seconds", "1", "--period-windows", "9", "--grace-seconds", "600", "--budget-epsilon", "3")
print(sorted(p.name for p in site.iterdir()))

# %%
# ``dpcloak deploy show`` states the guarantee the parameters imply, in words — the sentence to put
# in front of the people being counted. The **configuration fingerprint** is a SHA-256 of
# everything that determines it; every report's MAC covers it, so a report cannot be replayed into
# another deployment or a weaker configuration.
dpcloak("deploy", "show", str(site))

# %%
# Starting the collector
# ----------------------
# ``dpcloak serve --deployment site`` is the collector: an ASGI app served by uvicorn, a SQLite
# database in the deployment directory by default (``--db postgresql+psycopg://…`` for PostgreSQL),
# and a recovery worker process. Here it is a real process listening on a free port of the loopback
# interface, stopped at the end of the page (and at exit if the page fails midway).
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
url = f"http://127.0.0.1:{port}"
log = (workdir / "collector.log").open("w")
collector = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--deployment", str(site),
                              "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)


def stop_collector():
    """Stop the collector: SIGTERM (it finishes pending writes), SIGKILL if it is not gone within 30 s."""
    if collector.poll() is None:
        collector.terminate()
        try:
            collector.wait(timeout=30)
        except subprocess.TimeoutExpired:
            collector.kill()
            collector.wait(timeout=10)
    log.close()


atexit.register(stop_collector)


def wait_until(ready, *, timeout, what):
    """Poll ``ready()`` until it is true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if ready():
                return
        if collector.poll() is not None:
            raise RuntimeError(f"the collector exited: {(workdir / 'collector.log').read_text()}")
        time.sleep(0.1)
    raise TimeoutError(f"{what} not within {timeout} s")


wait_until(lambda: httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200, timeout=90, what="the collector")
print("collector ready:", httpx.get(f"{url}/api/v1/health", timeout=5).json())
print("dashboard:", dashboard_url(site, host="127.0.0.1", port=port))

# %%
# Sensors reporting
# -----------------
# Each sensor node holds only its own credential and the public ``deployment.json``. Two groups of
# people (40 and 25) cross the room; every sensor counts its neighbourhood through the heat model
# and hands the raw count to its node, which clips it to the declared range, adds the noise, records
# the release in its ledger *before* sending, and sends it (retrying with the same report id).
deployment = load_deployment(site)
network = deployment.sensor_network
sources = np.asarray(network.source_positions)
WINDOWS = 6


def crowd(window):
    """The true number of people at each source location in ``window`` (private: never leaves the sensors)."""
    truth = np.zeros(network.n_sources)
    for people, start, end in ((40.0, (2.0, 2.0), (10.0, 6.0)), (25.0, (10.0, 2.0), (3.0, 6.0))):
        where = np.add(start, (window / (WINDOWS - 1)) * np.subtract(end, start))
        truth[np.argmin(np.hypot(*(sources - where).T))] += people
    return truth


truths = [crowd(w) for w in range(WINDOWS)]
nodes = [SensorNode(deployment=deployment, credential=load_credential(site / "sensors" / f"sensor-{j}.json"),
                    ledger=workdir / f"ledger-{j}.db", url=url) for j in range(deployment.n_sensors)]
wait_until(lambda: deployment.window_at(time.time()) >= WINDOWS - 1, timeout=30, what="the sixth window")
deliveries = []
for w, truth in enumerate(truths):
    readings = network.model.matvec(truth)
    for node in nodes:
        deliveries.append(node.submit(float(readings[node.sensor]), window=w))
        if (node.sensor, w) == (0, 0):  # as if the acknowledgement had been lost: the node resends the same report
            deliveries.append(node.deliver(node.ledger.entry(0)))
print({outcome: sum(d.outcome == outcome for d in deliveries) for outcome in ("stored", "duplicate", "rejected")})
print("sensor 0, window 0: raw count", round(float(network.model.matvec(truths[0])[0]), 2),
      "-> sent", nodes[0].ledger.entry(0).value)

# %%
# What the collector refuses
# --------------------------
# Above, sensor 0 resent its first report as if the acknowledgement had been lost: same report id,
# acknowledged again (``duplicate``), stored once. That still holds after the window closed, so a node
# whose acknowledgement was lost in a crash is not stuck retrying forever. A forged or altered report
# does not verify. The answers are JSON with a one-line reason — the collector never returns a
# traceback. The budget lives on the node (the collector cannot count what a node forgot it
# released), so a node whose ledger was wiped refuses to start: its credential records the ledger it
# was created with, and a sensor whose ledger is lost needs a new credential.
late = nodes[0].deliver(nodes[0].ledger.entry(0))
print("resent after window 0 closed:", late.http_status, late.outcome)
# a second node for sensor 1 with an empty ledger (one whose storage was wiped)
try:
    SensorNode(deployment=deployment, credential=load_credential(site / "sensors" / "sensor-1.json"),
               ledger=workdir / "ledger-1-wiped.db", url=url)
except LedgerIntegrityError as refused:
    print("a node with a wiped ledger:", str(refused).replace(str(workdir), "<workdir>"))
forged = nodes[1].report_body(nodes[1].ledger.entry(1)) | {"value": 0.0}
answer = httpx.post(f"{url}/api/v1/reports", json=forged, timeout=10)
print("altered value:", answer.status_code, answer.json()["error"], "-", answer.json()["message"])

# %%
# The sensor enforces the policy
# ------------------------------
# The collector is untrusted, so it is not trusted to count: the release policy is public and each
# node enforces it from its own durable ledger and its own clock (a restart resets neither). Any
# 9 consecutive windows hold at most 9 release windows, each charged as one release of the whole
# vector of readings, whoever reported in it. A node never releases a window twice and never runs
# ahead of its clock (plus the deployment's stated skew), so nobody can make it release one reading
# into many future windows: both are refused before any noise is drawn.
policy = deployment.policy_statement()
print(f"any {policy.span_windows} consecutive windows: {policy.span_releases} release windows, "
      f"epsilon = {policy.span[0]:.2f} at delta = {policy.span[1]:g}; "
      f"one window: epsilon = {policy.window[0]:g} at delta = {policy.window[1]:g}")
for w in (WINDOWS - 1, WINDOWS + 50):
    try:
        nodes[0].release(5.0, window=w)
        print(f"window {w}: released (recorded in the ledger)")
    except DpcloakError as refusal:
        print(f"window {w}: refused — {str(refusal).split('; nothing released')[0]}")

# %%
# The analyst's view
# ------------------
# A window closes when every sensor has reported (or its grace period ends, or the analyst closes
# it) and the recovery worker turns its private readings into a map of people per 1 m × 1 m cell,
# warm-started from the previous window. The analyst's endpoints need the ``analyst.token`` —
# something no sensor holds.
analyst = httpx.Client(base_url=url, timeout=30,
                       headers={"Authorization": f"Bearer {(site / 'analyst.token').read_text().strip()}"})
wait_until(lambda: len(analyst.get("/api/v1/windows").json()["windows"]) >= WINDOWS, timeout=120,
           what="recovery of every window")
maps = [analyst.get(f"/api/v1/windows/{w}").json() for w in range(WINDOWS)]
export = analyst.get("/api/v1/export.csv").text.splitlines()
analyst.close()
for node in nodes:
    node.close()
stop_collector()
print("collector stopped:", collector.poll() is not None)
shutil.rmtree(workdir, ignore_errors=True)  # the deployment, its keys, the database and the ledgers
for record in maps[:2]:
    print({k: record[k] for k in ("window", "missing", "sigma", "epsilon_window", "epsilon_period", "uncertainty")})
print(f"export.csv: {len(export) - 1} rows; header: {export[0]}")

# %%
# Every map on one colour scale: what the collector recovered from private readings only, the
# people's true positions (which never left the sensors) and the sensors.
sensors = np.asarray(network.sensor_positions)
top = max(max(r["source_map"]) for r in maps)
fig, axes = plt.subplots(2, 3, figsize=(12, 6), sharex=True, sharey=True, constrained_layout=True)
for ax, record, truth in zip(axes.flat, maps, truths, strict=True):
    grid = np.asarray(record["source_map"])
    art = ax.scatter(*sources.T, c=grid, s=70, marker="s", cmap="magma_r", vmin=0, vmax=top)
    ax.scatter(*sensors.T, marker="^", s=22, color="tab:blue", label="sensor")
    ax.scatter(*sources[truth > 0].T, marker="o", s=160, facecolors="none", edgecolors="tab:green", linewidths=2,
               label="true group")
    ax.set(title=f"window {record['window']}: {sum(grid):.0f} people, ±{record['uncertainty']:.1f} m (EMD)",
           aspect="equal")
for ax in axes[-1]:
    ax.set_xlabel("x (m)")
for ax in axes[:, 0]:
    ax.set_ylabel("y (m)")
axes[0, 0].legend(fontsize="small", loc="upper right")
fig.colorbar(art, ax=axes, label="recovered people per 1 m² cell", shrink=0.8)
fig.suptitle("The collector's maps: 65 people in two groups crossing the room")
plt.show()

# %%
# The dashboard
# -------------
# ``dpcloak serve`` also serves the dashboard at ``/dashboard/``; it prints the URL and the path of
# ``analyst.token`` (never the token: start lines end up in service logs). The page asks for the token
# and keeps it in the browser tab's session storage; a link may also hand it over once in the URL
# fragment (``#token=…``, which browsers never send to the server; the page removes it from the address).
# It shows the latest recovered map over the sensor positions, a time slider over the closed windows,
# the guarantee in words and each sensor's activity and spent budget. ``dpcloak serve --demo`` runs
# a collector with 40 simulated counters on a floor plan to try it:
#
# .. image:: /figures/dashboard.png
#    :alt: The dashboard: the latest recovered map (people per square-metre cell) over the sensor
#          positions, the time slider, the guarantee in words and per-sensor activity
#
# On each real sensor, the same node runs as
# ``dpcloak sensor run --config sensor-j.json --deployment deployment.json --url http://collector:8000
# --ledger /var/lib/dpcloak/ledger.db``, reading counts from standard input or a CSV file it follows.
