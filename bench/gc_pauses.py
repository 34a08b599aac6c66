"""How long the garbage collector stops a gunicorn worker, with and without the freeze.

    python -m bench.gc_pauses [--seconds 8] [--students 40]

Runs `bench.load` (gunicorn from config/gunicorn.py, PostgreSQL, Redis; its closed loop of
students answering, its paced loops and its launches) twice, with ``GC_FREEZE=0`` and with
the default, and records every collection of generation 1 and 2 in the web workers through
``gc.callbacks`` (a ``sitecustomize`` module on the workers' path, so that the application
is untouched). Prints, per run, the full passes at start-up and under load and the
generation-1 passes, in ms of wall time (decisions §47; docs/benchmarks.md records a run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RECORDER = """
import gc, os, sys, time
_log = os.environ.get("GC_PAUSE_LOG")
if _log and "gunicorn" in " ".join(sys.argv):
    _started = [0.0]
    def _record(phase, info):
        if phase == "start":
            _started[0] = time.perf_counter()
        elif info["generation"] >= 1:
            took = (time.perf_counter() - _started[0]) * 1000
            with open(_log, "a") as log:
                log.write(f"{os.getpid()} {time.time():.3f} {info['generation']} {took:.3f}\\n")
    gc.callbacks.append(_record)
"""


def passes(log: Path) -> list[tuple[int, float, int, float]]:
    rows = []
    for line in log.read_text().splitlines():
        pid, at, generation, took = line.split()
        rows.append((int(pid), float(at), int(generation), float(took)))
    return rows


def describe(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    return (
        f"{len(ordered)} passes, median {statistics.median(ordered):.1f} ms, "
        f"max {ordered[-1]:.1f} ms, {sum(ordered):.0f} ms in all"
    )


def run(freeze: bool, seconds: float, students: int, folder: Path) -> str:
    log = folder / f"gc-{int(freeze)}.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
        "GC_PAUSE_LOG": str(log),
        "GC_FREEZE": "1" if freeze else "0",
    }
    command = [sys.executable, "-m", "bench.load", "--seconds", str(seconds)]
    subprocess.run([*command, "--students", str(students)], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    rows = passes(log)
    # The web workers are the processes with the most passes; the master collects rarely.
    counts = Counter(pid for pid, *_rest in rows)
    workers = {pid for pid, count in counts.items() if count > 10}
    started = {pid: min(at for p, at, *_ in rows if p == pid) for pid in workers}
    # Start-up: the worker's first ten seconds (import, first requests, the freezes).
    early = [took for pid, at, gen, took in rows if pid in workers and gen == 2
             and at - started[pid] < 10]  # fmt: skip
    later = [took for pid, at, gen, took in rows if pid in workers and gen == 2
             and at - started[pid] >= 10]  # fmt: skip
    young = [took for pid, _at, gen, took in rows if pid in workers and gen == 1]
    label = "frozen (GC_FREEZE=1)" if freeze else "Python's default (GC_FREEZE=0)"
    return (
        f"{label}, {len(workers)} workers:\n"
        f"  full passes in the first 10 s: {describe(early)}\n"
        f"  full passes after:             {describe(later)}\n"
        f"  generation-1 passes:           {describe(young)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8, help="per figure of bench.load")
    parser.add_argument("--students", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "sitecustomize.py").write_text(RECORDER)
        for freeze in (False, True):
            print(run(freeze, args.seconds, args.students, folder), flush=True)


if __name__ == "__main__":
    main()
