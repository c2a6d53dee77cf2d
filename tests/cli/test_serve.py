"""``dpcloak serve`` as a user meets it: a bad database, port or host is one line and status 2 before anything
is printed; Ctrl-C stops it quickly with one message. Real processes on 127.0.0.1, every wait bounded."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("fastapi", reason="the service extra is not installed: pip install 'dpcloak[service]'")

TIMEOUT = 120.0  # seconds any one process may take on a busy 2-core machine


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve") / "site"
    subprocess.run([sys.executable, "-m", "dpcloak", "deploy", "init", str(folder), "--sensor-cols", "2",
                    "--sensor-rows", "2"], check=True, capture_output=True, timeout=TIMEOUT, env=dict(os.environ))
    return folder


def _serve(*args):
    return subprocess.run([sys.executable, "-m", "dpcloak", "serve", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=dict(os.environ))


def _one_line_refusal(result, *words):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == "", "nothing (no dashboard URL) may be printed before the refusal"
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize(("db", "words"), [
    ("postgresql+psycopg://user@127.0.0.1:1/dpcloak", ("--db", "cannot reach", "127.0.0.1")),
    ("sqlite:////proc/no-such-dir/collector.db", ("--db", "cannot reach", "unable to open")),
    ("mysql://user@127.0.0.1/dpcloak", ("--db", "sqlite or postgresql")),
])
def test_an_unreachable_or_unwritable_database_is_one_line_before_the_url(site, db, words):
    _one_line_refusal(_serve("--deployment", str(site), "--db", db, "--port", str(_free_port())), *words)


def test_a_busy_port_is_one_line(site):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        _one_line_refusal(_serve("--deployment", str(site), "--port", str(port)), f"--port {port}", "already in use")


def test_a_host_that_is_not_this_machine_is_one_line(site):
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): a literal address (no name lookup) that no machine of ours holds
    _one_line_refusal(_serve("--deployment", str(site), "--host", "192.0.2.1", "--port", str(_free_port())),
                      "--host", "192.0.2.1", "not an address of this machine")


@pytest.mark.slow
def test_ctrl_c_stops_quickly_with_one_message_and_status_0(site, loopback_answers):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dpcloak", "serve", "--deployment", str(site), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        deadline = time.monotonic() + TIMEOUT
        while not loopback_answers(port):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate(timeout=TIMEOUT)
            time.sleep(0.2)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.startswith("dashboard: http://127.0.0.1:") and "Traceback" not in err
    assert err.splitlines() == ["Ctrl-C: stopping the collector (reports are committed first)"], err
    assert took < 30.0, f"Ctrl-C took {took:.1f} s"
