"""The tool's side of `make bench-vs-moodle`'s closed loops, without Moodle: where a request waits.

    python -m bench.tool_loop [--seconds 20] [--in-step]

The same students as bench.vs_moodle (its ToolStudent, Browser and checks: every form read
from its page, every feedback page checked), on gunicorn as production runs it
(config/gunicorn.py, 4 workers, PostgreSQL, Redis, `DEBUG=0`), in a database of its own
(bench.load's set-up: the students' sessions are made directly, so no LMS is needed and a
run takes about a minute instead of vs_moodle's ten). Closed loops of 10 and 40 students;
before them, student i answers i mod 8 questions (as vs_moodle does; ``--in-step`` leaves
them all on question 1).

Each request carries its own X-Request-ID, and gunicorn records when it took the request up
(a ``pre_request`` hook of a configuration that extends config/gunicorn.py) and the
application how long it spent in Django (its request log line). Prints the answers per
second and the latency percentiles as vs_moodle does (all answers, the others, the
finishing ones), then for each kind of request: its wait, from the client sending it to
gunicorn taking it up (the queue for the four workers), and its time in Django. For
comparing the tool with itself on one machine in one hour (A/B); the figures against Moodle
are vs_moodle's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from bench import load
from bench.vs_moodle import (
    Browser,
    Figures,
    ToolStudent,
    address_kind,
    closed_loop,
    percentile,
    questions,
    stagger,
)

ROOT = Path(__file__).resolve().parent.parent
PORT = 8794

GUNICORN_CONFIG = """
import sys, time
sys.path.insert(0, {root!r})
from config.gunicorn import *  # noqa: F403

_taken_up = open({log!r}, "a", buffering=1)


def pre_request(worker, req):
    request_id = next((v for k, v in req.headers if k == "X-REQUEST-ID"), "-")
    _taken_up.write(f"{{time.time():.6f}} {{request_id}} {{req.path}}\\n")
"""


class TracedBrowser(Browser):
    """A Browser whose every request has an id, and which notes when each was sent."""

    def __init__(self, aiohttp, sent: list[tuple[str, str, float]]) -> None:
        super().__init__(aiohttp)
        self.sent = sent

    async def _started(self, session, context, params) -> None:
        await super()._started(session, context, params)
        self._sent_at = time.time()

    async def _answered(self, session, context, params) -> None:
        await super()._answered(session, context, params)
        request_id = self.session.headers.get("X-Request-ID", "-")
        self.sent.append((request_id, urlsplit(str(params.url)).path, self._sent_at))
        self._sent_at = time.time()  # a redirect's next request leaves now

    async def get(self, url: str):
        self.session.headers["X-Request-ID"] = f"loop-{uuid.uuid4().hex}"
        return await super().get(url)

    async def submit(self, page, form, data):
        self.session.headers["X-Request-ID"] = f"loop-{uuid.uuid4().hex}"
        return await super().submit(page, form, data)


class SignedInStudent(ToolStudent):
    """A student whose session exists already: the activity's page instead of a launch."""

    def __init__(self, browser: Browser, base: str, placement: int) -> None:
        super().__init__(browser, base, 0)
        self.placement_url = f"{base}/quiz/{placement}/"

    async def launch(self):
        return await self.browser.get(self.placement_url)


def report(size: int, figures: Figures, waits: dict[str, list[tuple[float, float]]]) -> str:
    lines = [
        f"{size} students: {figures.rate:.1f} answers/s, {figures.errors} errors"
        + (f" ({figures.first_error})" if figures.errors else "")
        + "; latency p50 / p99 ms: all "
        + f"{figures.percentile(0.5):.0f} / {figures.percentile(0.99):.0f}, the others "
        + f"{figures.percentile(0.5, 'others'):.0f} / {figures.percentile(0.99, 'others'):.0f},"
        + " the finishing ones "
        + f"{figures.percentile(0.5, 'finishing'):.0f} / "
        + f"{figures.percentile(0.99, 'finishing'):.0f}"
        + f"; the client's full garbage collections: {len(figures.client_full_collections)}",
        "| request | count | wait p50 | wait p90 | wait p99 | in Django p50 | in Django p90 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for kind, pairs in sorted(waits.items()):
        wait = [w for w, _d in pairs]
        django = [d for _w, d in pairs]
        lines.append(
            f"| {kind} | {len(pairs)} | {percentile(wait, 0.5):.1f} | {percentile(wait, 0.9):.1f}"
            f" | {percentile(wait, 0.99):.1f} | {percentile(django, 0.5):.1f}"
            f" | {percentile(django, 0.9):.1f} |"
        )
    return "\n".join(lines)


def waits_by_kind(
    sent: list[tuple[str, str, float]], taken_up_log: Path, server_log: Path
) -> dict[str, list[tuple[float, float]]]:
    taken_up = {}
    for line in taken_up_log.read_text().splitlines():
        at, request_id, path = line.split(" ", 2)
        taken_up[(request_id, path)] = float(at)
    in_django = {}
    for line in server_log.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("logger") == "ops.requests":
            in_django[(record["request_id"], record["path"])] = record["duration_ms"]
    waits: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for request_id, path, sent_at in sent:
        key = (request_id, path)
        if key in taken_up and key in in_django:
            waits[address_kind(path)].append(((taken_up[key] - sent_at) * 1000, in_django[key]))
    return waits


async def measure(args, env, placement: int, sessions: list[str], folder: Path) -> None:
    import aiohttp
    from yarl import URL

    taken_up_log = folder / "taken-up.log"
    config = folder / "gunicorn_traced.py"
    config.write_text(GUNICORN_CONFIG.format(root=str(ROOT), log=str(taken_up_log)))
    server_log = folder / "gunicorn.log"
    with open(server_log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(config), "config.wsgi:application"],
            cwd=ROOT, env={**env, "LOG_LEVEL": "INFO", "LOG_FORMAT": "json"},
            stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{PORT}"
    sent: list[tuple[str, str, float]] = []
    browsers = [TracedBrowser(aiohttp, sent) for _ in sessions]
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", PORT), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.2)
        for browser, key in zip(browsers, sessions, strict=True):
            browser.session.cookie_jar.update_cookies({"sessionid": key}, URL(f"{base}/"))
        students = [SignedInStudent(browser, base, placement) for browser in browsers]
        content = questions()
        for student in students:
            await student.open()
        if not args.in_step:
            for number, student in enumerate(students):
                await stagger(student, content, number)
        await closed_loop(students[:4], content, 5)  # warm-up
        for size in (10, 40):
            sent.clear()
            figures = await closed_loop(students[:size], content, args.seconds)
            print(report(size, figures, waits_by_kind(sent, taken_up_log, server_log)), flush=True)
    finally:
        await asyncio.gather(*(browser.close() for browser in browsers))
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20, help="per closed loop")
    parser.add_argument("--in-step", action="store_true", help="every student on question 1")
    args = parser.parse_args()
    env = load.environment(PORT, workers=4, threads=1)
    placement, _questions, sessions = load.prepare(env, 40)
    started = datetime.now().astimezone().isoformat(timespec="seconds")
    print(f"{started}; gunicorn 4 workers, PostgreSQL + Redis on loopback; {args.seconds:.0f} s"
          f" per loop; {'in step' if args.in_step else 'out of step'}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as name:
        asyncio.run(measure(args, env, placement, sessions, Path(name)))


if __name__ == "__main__":
    main()
