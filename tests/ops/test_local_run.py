"""`make run` ends with Ctrl-C, and that must look like a clean stop: the terminal's
SIGINT reaches every process of its group, and no process reports an error, nor make a
failure. The test runs the recipe's own command line (from `make -n`, which runs nothing)
on the embedded defaults in a fresh folder, and presses Ctrl-C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER_ENV = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.worker
def test_ctrl_c_after_make_run_stops_everything_without_errors(tmp_path):
    port = free_port()
    # Under `make test` the parent make's MAKEFLAGS and MAKELEVEL would make this one print
    # "Entering/Leaving directory" lines around the recipe.
    inherited = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    make_env = {k: v for k, v in os.environ.items() if k not in inherited}
    recipe = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", f"PORT={port}"],
        cwd=ROOT,
        env=make_env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    command = recipe[-1]
    assert "honcho start" in command
    env = {k: v for k, v in os.environ.items() if k not in SERVER_ENV}
    env["GCQUIZ_VAR_DIR"] = str(tmp_path)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env={**env, "DEBUG": "1"},
        check=True,
        capture_output=True,
    )
    run = subprocess.Popen(
        ["sh", "-c", command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except OSError:
                assert run.poll() is None, run.stdout.read()
                assert time.monotonic() < deadline, "no answer on /healthz in 120 s"
                time.sleep(0.5)
        time.sleep(3)  # the workers and beat finish starting
        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C
        output, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 0, output[-3000:]
    assert "SIGINT received" in output
    for name in ("web", "worker", "gpu-worker", "beat"):
        assert f"{name}.1 stopped" in output
    problems = [line for line in output.splitlines() if "ERROR" in line or "Traceback" in line]
    assert problems == []
