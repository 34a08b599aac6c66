"""Throughput and latency of the service as production runs it, on this machine.

    python -m bench.load [--seconds 15] [--students 100] [--workers 4]

Starts gunicorn (config/gunicorn.py) on PostgreSQL and Redis, in a database of its own
(gcquiz_load, dropped and made again), and drives it from an asyncio client (aiohttp) in
this process:

* the ceiling: GET /healthz, a view that touches nothing, through the same stack;
* quiz answers: 100 students, each in their own session, answering question after
  question (a new attempt after the eighth); the figure is the answer POSTs, first as fast
  as the students can (the most the service does), then arriving at 40% of the ceiling's
  rate (latency from each answer's arrival, queueing included), once a second per student,
  and at the highest arrival rate that keeps p99 under 100 ms (found by bisection);
* LTI launches: OIDC login, a launch signed by the independent platform library
  (lti1p3platform, as in the tests), and the landing page, as one unit.

Prints one Markdown table; each figure also as a share of the ceiling, so runs on noisy
machines compare, and the CPU per request of gunicorn, PostgreSQL, Redis and this load
generator. docs/benchmarks.md records the output.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
# Override on a machine where others run benchmarks too.
DATABASE = os.environ.get("BENCH_DATABASE", "gcquiz_load")
SERVER = "postgres://postgres@127.0.0.1:5432"
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
STATIC_ROOT = Path("/tmp/gcquiz-load-static")


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ROLES = ("gunicorn", "postgres", "redis", "client")


def cpu_seconds_by_role(server_pid: int) -> dict[str, float]:
    """CPU time so far of the load generator (this process), gunicorn (master and
    workers), PostgreSQL and Redis, read from /proc. Each process counts with its reaped
    children, so a database connection that closed in between (its backend gone) stays
    counted in the postmaster."""
    totals = dict.fromkeys(ROLES, 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        pid, parent = int(entry.name), int(fields[1])
        seconds = sum(int(ticks) for ticks in fields[11:15]) / CLOCK_TICKS
        if pid == os.getpid():
            totals["client"] += seconds
        elif server_pid in (pid, parent):
            totals["gunicorn"] += seconds
        elif name.startswith("postgres"):
            totals["postgres"] += seconds
        elif name.startswith("redis-server"):
            totals["redis"] += seconds
    return totals


# The attempt a question page is of: its canonical address (decision 60's page_address).
ATTEMPT_ADDRESS = re.compile(r'<link rel="canonical" href="/attempts/([0-9a-f-]{36})/">')


@dataclass
class Figures:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0
    cpu_ms: dict[str, float] = field(default_factory=dict)  # per request, by role

    @property
    def rate(self) -> float:
        return len(self.latencies) / (self.finished - self.started)

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


def environment(port: int, workers: int, threads: int) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"{SERVER}/{DATABASE}",
        "REDIS_URL": REDIS,
        "SECRET_KEY": "load-" + "k" * 60,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LTI_TOOL_URL": f"http://127.0.0.1:{port}/",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(workers),
        "GUNICORN_THREADS": str(threads),
        "LOG_LEVEL": "WARNING",
        "SECURE_COOKIES": "0",
        # The independent platform serves its keys on loopback, which the outbound policy
        # refuses unless told (lti/http.py).
        "LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES": "1",
        "STATIC_MANIFEST": "1",
        "STATIC_ROOT": str(STATIC_ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


def prepare(env: dict[str, str], students: int):
    subprocess.run(["psql", f"{SERVER}/postgres", "-q", "-c",
                    f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"], check=True)  # fmt: skip
    subprocess.run(
        ["psql", f"{SERVER}/postgres", "-q", "-c", f"CREATE DATABASE {DATABASE}"], check=True
    )
    subprocess.run(["redis-cli", "-u", REDIS, "FLUSHDB"], check=True, capture_output=True)
    os.environ.update({k: v for k, v in env.items() if k not in ("GUNICORN_BIND",)})
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.cached_db import SessionStore
    from django.core.management import call_command

    from activities.services import place_activity
    from lti.access import SESSION_KEY
    from lti.models import Context, Membership, ResourceLink, Role

    call_command("migrate", verbosity=0)
    call_command("load_quiz", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)
    from assessments.models import Quiz

    quiz = Quiz.objects.get()
    context = Context.objects.create(context_id="load-course", title="Load course")
    placement = ResourceLink(context=context, resource_link_id="load", title="Load")
    place_activity(placement, f"quiz:{quiz.slug}", {"max_attempts": "0"})
    questions = [
        (q.pk, q.options.order_by("position").first().pk)
        for q in quiz.current_version.questions.order_by("position")
    ]
    sessions = []
    for number in range(students):
        user = get_user_model().objects.create_user(username=f"load-{number}")
        Membership.objects.create(context=context, user=user, role=Role.LEARNER)
        session = SessionStore()
        session["_auth_user_id"] = str(user.pk)
        session["_auth_user_backend"] = "lti.backends.CachedUserBackend"
        session["_auth_user_hash"] = user.get_session_auth_hash()
        session[SESSION_KEY] = {str(context.pk): Role.LEARNER}
        session.create()
        sessions.append(session.session_key)
    return placement.pk, questions, sessions


def start_gunicorn(env: dict[str, str], port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import socket

    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("gunicorn did not start")


async def run_for(seconds: float, users: int, one_step) -> Figures:
    figures = Figures()
    deadline = time.perf_counter() + seconds

    async def user(index: int) -> None:
        state: dict = {}
        while time.perf_counter() < deadline:
            await one_step(index, state, figures)

    figures.started = time.perf_counter()
    await asyncio.gather(*(user(i) for i in range(users)))
    figures.finished = time.perf_counter()
    return figures


async def ceiling(session, base: str, seconds: float, users: int) -> Figures:
    async def step(_index, _state, figures: Figures) -> None:
        started = time.perf_counter()
        async with session.get(f"{base}/healthz") as response:
            await response.read()
        figures.latencies.append(time.perf_counter() - started)

    return await run_for(seconds, users, step)


def answer_clients(aiohttp, sessions):
    """One client per student, sending its cookies and CSRF token as fixed headers: the
    same bytes a browser sends, without a cookie jar working on every request (the server
    sets no cookie on these requests), which took CPU from the server's two cores."""
    csrf = secrets.token_hex(16)
    return [
        aiohttp.ClientSession(
            cookie_jar=aiohttp.DummyCookieJar(),
            headers={
                "Cookie": f"sessionid={key}; csrftoken={csrf}",
                "X-CSRFToken": csrf,
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        for key in sessions
    ]


def answer_step(clients, base: str, placement: int, questions):
    """One student's next answer (a new attempt after the eighth); the answer's POST is
    timed from ``scheduled`` (when it was due), so waiting for a free server counts."""

    states: list[dict] = [{} for _ in clients]  # where each student is, across both runs

    async def step(index: int, _state: dict, figures: Figures, scheduled: float | None = None):
        client, state = clients[index], states[index]
        if state.get("position", 8) == 8:
            async with client.post(f"{base}/quiz/{placement}/start/", allow_redirects=False) as r:
                # Answered by question 1, which names its attempt's address.
                state["attempt"] = ATTEMPT_ADDRESS.search(await r.text())[1]
            state["position"] = 0
        question, option = questions[state["position"]]
        started = time.perf_counter() if scheduled is None else scheduled
        async with client.post(
            f"{base}/attempts/{state['attempt']}/answer/",
            data=f"question={question}&option={option}".encode(),
            allow_redirects=False,
        ) as response:
            await response.read()
            # Answered by its page (decision 57): the feedback, or after the last the results.
            if response.status != 200:
                figures.errors += 1
                figures.statuses[response.status] = figures.statuses.get(response.status, 0) + 1
        figures.latencies.append(time.perf_counter() - started)
        state["position"] += 1

    return step


async def paced(rate: float, seconds: float, users: int, step) -> Figures:
    """Open loop: answers arrive at ``rate`` per second whatever the server does, each given
    to a student who is not waiting for a reply (latency counts from the arrival)."""
    figures = Figures()
    idle: asyncio.Queue[int] = asyncio.Queue()
    for index in range(users):
        idle.put_nowait(index)
    states: list[dict] = [{} for _ in range(users)]

    async def one(index: int, scheduled: float) -> None:
        try:
            await step(index, states[index], figures, scheduled)
        finally:
            idle.put_nowait(index)

    running = []
    figures.started = time.perf_counter()
    arrival = figures.started
    while arrival < figures.started + seconds:
        await asyncio.sleep(max(0.0, arrival - time.perf_counter()))
        index = await idle.get()
        running.append(asyncio.create_task(one(index, arrival)))
        arrival += 1 / rate
    await asyncio.gather(*running)
    figures.finished = time.perf_counter()
    return figures


async def highest_rate_within(
    p99_ms: float, low: float, high: float, seconds: float, users: int, step, measure, probes=6
) -> Figures | None:
    """The highest open-loop arrival rate whose answers keep p99 under ``p99_ms``, found by
    bisection between ``low`` and ``high`` answers per second; the figures of that rate's
    run (None when even ``low`` misses it)."""
    best = None
    for _ in range(probes):
        rate = (low + high) / 2
        figures = await measure(paced(rate, seconds, users, step))
        if figures.errors == 0 and figures.percentile(0.99) < p99_ms:
            best, low = figures, rate
        else:
            high = rate
    return best


async def launches(aiohttp, base: str, platform, seconds: float, users: int) -> Figures:
    async def step(index: int, state: dict, figures: Figures) -> None:
        user_id = f"launch-{index}-{state.setdefault('n', 0) % 20}"
        state["n"] += 1
        started = time.perf_counter()
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
            params = platform.login_initiation(user_id=user_id)
            async with client.get(f"{base}/lti/login/", params=params, allow_redirects=False) as r:
                auth = {k: v[0] for k, v in parse_qs(urlsplit(r.headers["Location"]).query).items()}
            form = platform.authorize(auth, user_id=user_id, roles=[LEARNER], locale="en")
            async with client.post(f"{base}/lti/launch/", data=form, allow_redirects=False) as r:
                landing = r.headers.get("Location")
            if landing is None:
                figures.errors += 1
                return
            async with client.get(base + landing) as r:
                await r.read()
                if r.status != 200:
                    figures.errors += 1
        figures.latencies.append(time.perf_counter() - started)

    return await run_for(seconds, users, step)


LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"


def cache_private_keys() -> None:
    """The platform library parses its PEM key twice per launch (about 90 ms of this
    process's CPU, which the machine's two cores share with the server): the load generator
    keeps the parsed key, as a real platform would."""
    import functools

    import jwt.algorithms
    from cryptography.hazmat.primitives import serialization

    cached = functools.lru_cache(maxsize=8)(serialization.load_pem_private_key)
    serialization.load_pem_private_key = cached
    jwt.algorithms.load_pem_private_key = cached


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    cache_private_keys()
    env = environment(args.port, args.workers, args.threads)
    placement, questions, sessions = prepare(env, args.students)
    sys.path.insert(0, str(ROOT))
    from tests.lti_platform import Platform, PlatformServer

    platform_server = PlatformServer()
    platform = Platform(platform_server, tool=f"http://127.0.0.1:{args.port}")
    platform.register_in_tool()
    server = start_gunicorn(env, args.port)
    base = f"http://127.0.0.1:{args.port}"

    import aiohttp

    async def measured(run) -> Figures:
        before = cpu_seconds_by_role(server.pid)
        figures = await run
        after = cpu_seconds_by_role(server.pid)
        count = max(1, len(figures.latencies))
        figures.cpu_ms = {role: (after[role] - before[role]) * 1000 / count for role in ROLES}
        return figures

    async def everything():
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            await ceiling(session, base, 3, 20)  # warm-up
            top = await measured(ceiling(session, base, args.seconds, args.students))
        clients = answer_clients(aiohttp, sessions)
        step = answer_step(clients, base, placement, questions)
        try:
            saturated = await measured(run_for(args.seconds, len(clients), step))
            quiz = await measured(paced(0.4 * top.rate, args.seconds, len(clients), step))
            steady = await measured(paced(len(clients) / 1.0, args.seconds, len(clients), step))
            within = await highest_rate_within(
                100, 0.05 * top.rate, 0.6 * top.rate, args.seconds / 2, len(clients), step, measured
            )
        finally:
            await asyncio.gather(*(client.close() for client in clients))
        lti = await measured(launches(aiohttp, base, platform, args.seconds, 20))
        return top, saturated, quiz, steady, within, lti

    try:
        top, saturated, quiz, steady, within, lti = asyncio.run(everything())
    finally:
        server.terminate()
        server.wait()
        platform_server.stop()
    print(
        f"gunicorn {args.workers} workers × {args.threads} threads, PostgreSQL + Redis "
        f"on loopback; {args.seconds:g} s per figure; python {sys.version.split()[0]}"
    )
    print(
        "| figure | per second | share of the ceiling | p50 ms | p95 ms | p99 ms | errors "
        "| CPU ms each: gunicorn / PostgreSQL / Redis / load generator |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, figures in (
        (f"ceiling: GET /healthz, {args.students} connections", top),
        (f"quiz answers, {args.students} students as fast as they can (closed loop)", saturated),
        ("quiz answers arriving at 40% of the ceiling's rate (open loop)", quiz),
        (f"quiz answers, {args.students} students answering once a second each", steady),
        ("quiz answers, the highest arrival rate with p99 under 100 ms (open loop)", within),
        ("LTI launches (login + signed launch + landing page), 20 at a time", lti),
    ):
        if figures is None:
            print(f"| {label} | none found | | | | | | |")
            continue
        print(
            f"| {label} | {figures.rate:.0f} | {figures.rate / top.rate:.0%} | "
            f"{figures.percentile(0.50):.1f} | {figures.percentile(0.95):.1f} | "
            f"{figures.percentile(0.99):.1f} | {figures.errors} | "
            + " / ".join(f"{figures.cpu_ms[role]:.2f}" for role in ROLES)
            + " |"
        )


if __name__ == "__main__":
    main()
