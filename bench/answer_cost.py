"""What each request of a quiz attempt costs the server, in one process without contention.

    python -m bench.answer_cost [--students 20] [--attempts 100] [--profile]

Prepares the database of ``bench.load`` (gcquiz_load, made again), then calls the WSGI
application directly, as gunicorn would, for students who start attempts and answer all
eight questions. Prints the median CPU time (``time.process_time``) and the SQL statements
of each kind of request: the trivial view of the load benchmark's ceiling, starting an
attempt, an answer that does not finish the attempt, and the last answer. ``--profile``
adds cProfile's top functions for the answers. docs/benchmarks.md records the output.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import secrets
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable

from . import load


def wsgi_caller(application: Callable, port: int) -> Callable:
    def call(method: str, path: str, cookie: str = "", body: bytes = b"", csrf: str = ""):
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": str(port),
            "HTTP_HOST": f"127.0.0.1:{port}",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            "CONTENT_LENGTH": str(len(body)),
            "CONTENT_TYPE": "application/x-www-form-urlencoded",
            "HTTP_COOKIE": cookie,
            "HTTP_X_CSRFTOKEN": csrf,
        }
        reply: dict = {}

        def start_response(status: str, headers: list, exc_info=None) -> None:
            reply["status"], reply["headers"] = status, dict(headers)

        b"".join(application(environ, start_response))
        return reply["status"], reply["headers"]

    return call


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=100, help="attempts timed, in all")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    env = load.environment(args.port, workers=1, threads=1)
    placement, questions, sessions = load.prepare(env, args.students)

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from config.wsgi import application

    call = wsgi_caller(application, args.port)
    csrf = secrets.token_hex(16)
    cpu: dict[str, list[float]] = defaultdict(list)
    statements: dict[str, list[int]] = defaultdict(list)
    profile = cProfile.Profile()

    def timed(kind: str, *request) -> dict:
        with CaptureQueriesContext(connection) as queries:
            started = time.process_time()
            if args.profile and kind != "trivial view (GET /healthz)":
                profile.enable()
            status, headers = call(*request, csrf=csrf)
            profile.disable()
            cpu[kind].append(time.process_time() - started)
        statements[kind].append(len(queries.captured_queries))
        assert status[:3] in ("200", "302"), (kind, status)
        return headers

    def attempt(student: int) -> None:
        cookie = f"sessionid={sessions[student]}; csrftoken={csrf}"
        location = timed("starting an attempt", "POST", f"/quiz/{placement}/start/", cookie)[
            "Location"
        ]
        public_id = location.rstrip("/").split("/")[-1]
        for position, (question, option) in enumerate(questions, start=1):
            kind = (
                "the last answer (finish, counted flags, grade)"
                if position == len(questions)
                else "an answer that does not finish the attempt"
            )
            body = f"question={question}&option={option}".encode()
            timed(kind, "POST", f"/attempts/{public_id}/answer/", cookie, body)

    for number in range(args.students):  # warm-up: connections, caches, first attempts
        attempt(number)
    cpu.clear(), statements.clear()
    for number in range(args.attempts):
        attempt(number % args.students)
        for _ in range(len(questions)):
            timed("trivial view (GET /healthz)", "GET", "/healthz")

    print(
        f"{args.attempts} attempts of {len(questions)} questions by {args.students} students; "
        f"one process, PostgreSQL and Redis on loopback; python {sys.version.split()[0]}"
    )
    print("| request | CPU ms (median) | SQL statements |")
    print("| --- | --- | --- |")
    for kind, times in cpu.items():
        print(
            f"| {kind} | {statistics.median(times) * 1000:.2f} | "
            f"{statistics.mean(statements[kind]):.1f} |"
        )
    attempt_seconds = sum(sum(times) for kind, times in cpu.items() if "GET" not in kind)
    answers = args.attempts * len(questions)
    print(
        f"\nper answer, starting and finishing included: {attempt_seconds / answers * 1000:.2f} ms"
    )
    if args.profile:
        report = io.StringIO()
        pstats.Stats(profile, stream=report).sort_stats("cumulative").print_stats(40)
        print(report.getvalue())


if __name__ == "__main__":
    main()
