"""What each request of a quiz attempt and of an LTI launch costs the server, in one
process without contention.

    python -m bench.answer_cost [--students 20] [--attempts 100] [--launches 200] [--profile KIND]
                           [--queries KIND] [--parts] [--without SHORTCUT]

Prepares the database of ``bench.load`` (gcquiz_load, made again), then calls the WSGI
application directly, as gunicorn would, for students who start attempts and answer all
eight questions as a browser does (the start, answered by question 1, then each answer,
whose response is its feedback page carrying the next question's form, or after the last
the results; beside them, what a reload of each kind of page costs), and
for launches signed by the independent platform library (20 users taking turns; half of
them have an attempt in progress, which their launch answers with). Prints the
median CPU time (``time.process_time``, the platform's signing left out) and the SQL
statements of each kind of request, each also in trivial views (the load benchmark's
ceiling), and its median wall-clock time (the CPU and the waits on PostgreSQL and Redis,
their commits included; no server in front), the requests of a launch, then the whole loop
per answer.
Beside them, three floors, timed eight times an attempt: the trivial view (``GET /healthz``,
answered by the third middleware), a constant page through every middleware and one behind
``launch_required`` with the session's user (bench/urls.py, routed in this process only).
``--profile TEXT`` adds cProfile's top functions (CPU time) for the kinds of request whose
name contains TEXT; ``--queries TEXT`` prints the SQL of the last such request; ``--parts``
the mean CPU time of the template, the attempt's statement, the session and the user.
docs/benchmarks.md records the output.
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
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlencode, urlsplit

from . import load


def _per_launch(cpu: dict[str, list[float]], outcome: str) -> float:
    """Seconds of CPU of a launch whose signed launch's kind names ``outcome``: the medians
    of its login and of each of its other requests."""
    return sum(
        statistics.median(times)
        for kind, times in cpu.items()
        if kind.startswith("launch 1") or outcome in kind
    )


def _keep_cookies(jar: SimpleCookie, headers: dict) -> None:
    """What a browser keeps of a response's cookies: the ones set, not the ones deleted."""
    jar.load("\n".join(headers["Set-Cookie"]))
    for name in [name for name, morsel in jar.items() if not morsel.value]:
        del jar[name]


def _start_if_resuming(call: Callable, csrf: str, launched: dict, started: set[str]) -> None:
    """The warm-up's attempt in progress for a user whose later launches resume it."""
    landing = urlsplit(launched["landing"]).path  # without the launch's handoff
    if launched["resuming"] and landing.startswith("/quiz/"):
        status, _headers = call("POST", landing + "start/", launched["cookie"], csrf=csrf)
        if not status.startswith("200"):  # answered by its question
            raise SystemExit(f"the warm-up's attempt did not start ({status} from {landing})")
        started.add(launched["user_id"])


def _check_answered(in_progress: bool, headers: dict) -> None:
    """A launch with an attempt in progress is timed as answered by its question, which it
    must then be."""
    if in_progress and "Location" in headers:
        raise SystemExit(f"a launch with an attempt in progress led to {headers['Location']}")


def wsgi_caller(application: Callable, port: int) -> Callable:
    def call(method: str, path: str, cookie: str = "", body: bytes = b"", csrf: str = ""):
        path, _, query = path.partition("?")
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
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

        def start_response(status: str, headers: list, _exc_info=None) -> None:
            reply["status"], reply["headers"] = status, dict(headers)
            reply["cookies"] = [value for name, value in headers if name == "Set-Cookie"]

        content = b"".join(application(environ, start_response))
        # The headers as a dict, with every Set-Cookie in a list and the body beside them.
        headers = {**reply["headers"], "Set-Cookie": reply["cookies"], "body": content}
        return reply["status"], headers

    return call


def _without_sql_answer() -> None:
    """Every answer through the checked ORM path (decision 24's fallback)."""
    from assessments import services

    services._record_next_answer = lambda *args: None


def _without_cached_user() -> None:
    """The session user from the database, as Django's ModelBackend reads it (decision 25)."""
    from django.contrib.auth.backends import ModelBackend

    from lti.backends import CachedUserBackend

    CachedUserBackend.get_user = ModelBackend.get_user


def _without_own_cache() -> None:
    """Django's own Redis cache backend, which builds a Redis client per call, in place of
    ops.cache's (one client per cache object; decision 44)."""
    from django.conf import settings
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    config = settings.CACHES["default"]
    params = {k: v for k, v in config.items() if k not in ("BACKEND", "LOCATION")}
    caches["default"] = RedisCache(config["LOCATION"], params)


ANSWER = "an answer, answered by its feedback page (with the next question)"
LAST_ANSWER = "the last answer (finish, counted flags, grade), answered by the results"
# Beside the loop's pages: the trivial view (answered by the third middleware, before the
# session), a constant page through every middleware, and one behind launch_required, which
# reads the session and its user as every page of the loop does (bench/urls.py).
CONSTANT_PAGE = "a constant page through every middleware"
SIGNED_IN_PAGE = "a constant page behind launch_required (the session and its user)"
TRIVIAL = "trivial view (GET /healthz)"
FLOOR = (TRIVIAL, CONSTANT_PAGE, SIGNED_IN_PAGE)
START = "starting an attempt, answered by question 1"
QUESTION_PAGE = "the question page (question 1, read again)"
FEEDBACK_PAGE = "the feedback page (question 1's, read again)"
RESULTS_PAGE = "the results page (read again)"
# Not requests of the loop (each page comes as the response of the request before it): what
# a reload of each costs.
READ_AGAIN = (QUESTION_PAGE, FEEDBACK_PAGE, RESULTS_PAGE)
# The pages whose parts --parts times.
PARTS_OF = ("the question page", ANSWER)


def _timed_parts(kind_now: list[str]) -> dict[str, list[float]]:
    """CPU time of the parts of the PARTS_OF pages (``kind_now[0]`` is the kind of request
    being served), wrapped in timers in this process (--parts)."""
    import django.template.backends.django as templates

    from assessments import selectors
    from lti import backends, middleware
    from ops import sessions

    parts: dict[str, list[float]] = defaultdict(list)
    for owner, name, label in (
        (templates.Template, "render", "the template"),
        (selectors, "own_attempt_view", "the attempt's statement and its view"),
        (sessions.SessionStore, "load", "the session (cache)"),
        (backends.CachedUserBackend, "get_user", "the user (cache)"),
        (middleware, "frame_ancestors", "the framing origins"),
    ):
        real = getattr(owner, name)

        def timed(*args, _real=real, _label=label, **kwargs):
            if not kind_now[0].startswith(PARTS_OF):
                return _real(*args, **kwargs)
            started = time.process_time()
            try:
                return _real(*args, **kwargs)
            finally:
                parts[_label].append(time.process_time() - started)

        setattr(owner, name, timed)
    return parts


def _print_parts(parts: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    if not parts:
        return
    print(f"\nparts of {' and '.join(PARTS_OF)}, CPU ms (mean per page)")
    pages = sum(len(times) for kind, times in cpu.items() if kind.startswith(PARTS_OF))
    for label, times in parts.items():
        print(f"  {label}: {sum(times) / pages * 1000:.3f}")


def _without_csrf_token() -> None:
    """The quiz's pages without Django's CSRF token: none masked for a page's form, none
    checked on its POST. What a check of the browser's Fetch Metadata in its place would
    save (decision 90 weighs it)."""
    from assessments import views

    views.get_token = lambda _request: "-" * 64
    for view in (views.start_attempt, views.attempt_page, views.answer, views.feedback):
        view.csrf_exempt = True


def _without_server_session() -> None:
    """Sessions in signed cookies (Django's ``signed_cookies`` engine), read with no round
    trip, where ``ops.sessions`` reads each through Redis: what giving up sessions that the
    server can end would save (decision 90 weighs it). Set before the application loads its
    middleware; the students' sessions are carried over by ``_in_signed_cookies``."""
    from django.conf import settings

    settings.SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"


def _in_signed_cookies(session_keys: list[str]) -> list[str]:
    """The stored sessions' data, each as a signed cookie's value."""
    from django.contrib.sessions.backends import signed_cookies
    from django.contrib.sessions.backends.cached_db import SessionStore

    values = []
    for key in session_keys:
        cookie = signed_cookies.SessionStore()
        cookie.update(SessionStore(key).load())
        cookie.save()
        values.append(cookie.session_key)
    return values


def _turn_off(names: list[str], session_keys: list[str]) -> list[str]:
    """Turns off each of ``names`` (SHORTCUTS); the students' session cookies after it."""
    for name in names:
        SHORTCUTS[name]()
    return _in_signed_cookies(session_keys) if "server-session" in names else session_keys


# What --without turns off, in this process only: a measurement, not a setting. The first
# three are the loop's shortcuts; the last two are controls that decision 90 kept.
SHORTCUTS = {
    "sql-answer": _without_sql_answer,
    "cached-user": _without_cached_user,
    "own-cache": _without_own_cache,
    "csrf-token": _without_csrf_token,
    "server-session": _without_server_session,
}


class StatementCounter:
    """The round trips of SQL a request makes, counted through the connection's public
    execute wrapper: each statement, and a transaction's BEGIN (psycopg sends it before the
    transaction's first statement) and its COMMIT or ROLLBACK where it ran one. Django's
    query capture for tests turns on the debug cursor, which formats every statement's SQL
    with its parameters, work that production never does (8-9% of an answer's time under
    cProfile here), and logs a BEGIN and a COMMIT even around a block that sent nothing; the
    figures before 2026-12-04 carry both."""

    def __init__(self, connection, keep_sql: bool) -> None:
        self.connection = connection
        self.keep_sql = keep_sql
        self.sql: list[str] = []
        self._begun = False  # a transaction started and its BEGIN not yet sent
        self._sent = False  # the transaction sent a statement
        self._wrapper = None
        real_set_autocommit = connection.set_autocommit
        real_commit = connection.commit
        real_rollback = connection.rollback

        def set_autocommit(autocommit: bool, *args, **kwargs) -> None:
            self._begun, self._sent = not autocommit, False
            real_set_autocommit(autocommit, *args, **kwargs)

        def end(real, name: str) -> None:
            if self._sent:
                self.sql.append(name)
            self._begun = self._sent = False
            real()

        connection.set_autocommit = set_autocommit
        connection.commit = lambda: end(real_commit, "COMMIT")
        connection.rollback = lambda: end(real_rollback, "ROLLBACK")

    def _count(self, execute, sql, params, many, context):
        if self._begun and not self._sent:
            self.sql.append("BEGIN")
            self._sent = True
        self.sql.append(sql if self.keep_sql else "")
        return execute(sql, params, many, context)

    def __enter__(self) -> StatementCounter:
        self.sql = []
        self._wrapper = self.connection.execute_wrapper(self._count)
        self._wrapper.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._wrapper.__exit__(*exc)


def _print_profile_and_queries(
    args: argparse.Namespace, profile: cProfile.Profile, last_queries: dict[str, list[str]]
) -> None:
    if args.profile and profile.getstats():
        # Where the time goes (cumulative: views, selectors, templates, the ORM), then what
        # costs by itself.
        for order, lines in (("cumulative", 60), ("tottime", 25)):
            report = io.StringIO()
            pstats.Stats(profile, stream=report).sort_stats(order).print_stats(lines)
            print(report.getvalue())
    for kind, sql in last_queries.items():
        print(f"\nthe SQL of the last {kind!r}:")
        print("\n".join(f"  {number}. {text}" for number, text in enumerate(sql, start=1)))
    unmatched = [
        (option, text)
        for option, text, matched in (
            ("--profile", args.profile, profile.getstats()),
            ("--queries", args.queries, last_queries),
        )
        if text and not matched
    ]
    for option, text in unmatched:
        print(f"{option} {text!r}: no request's kind contains it; the kinds are the table's rows")
    if unmatched:
        raise SystemExit(2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=100, help="attempts timed, in all")
    parser.add_argument("--launches", type=int, default=200, help="launches timed")
    parser.add_argument(
        "--profile", metavar="KIND", help="cProfile the requests whose kind contains this text"
    )
    parser.add_argument(
        "--queries",
        metavar="KIND",
        help="print the SQL of the last request whose kind contains this",
    )
    parser.add_argument(
        "--parts",
        action="store_true",
        help="time the parts of the pages (template, statement, session, user) as well",
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--without",
        choices=sorted(SHORTCUTS),
        action="append",
        default=[],
        help="measure with this shortcut of the answer loop off (decisions 24, 25 and 44), or"
        " this control (decision 90)",
    )
    args = parser.parse_args()
    load.cache_private_keys()
    env = load.environment(args.port, workers=1, threads=1)
    placement, questions, sessions = load.prepare(env, args.students)
    from tests.lti_platform import ROLE, Platform, PlatformServer

    platform_server = PlatformServer()
    platform = Platform(platform_server, tool=f"http://127.0.0.1:{args.port}")
    platform.register_in_tool()

    from django.conf import settings
    from django.db import connection

    sessions = _turn_off(args.without, sessions)  # before the application loads its middleware

    from config.wsgi import application

    from .urls import CONSTANT_PATH, SIGNED_IN_PATH

    settings.ROOT_URLCONF = "bench.urls"  # the two constant pages beside the service's

    kind_now = [""]
    parts = _timed_parts(kind_now) if args.parts else {}
    call = wsgi_caller(application, args.port)
    csrf = secrets.token_hex(16)
    cpu: dict[str, list[float]] = defaultdict(list)
    wall: dict[str, list[float]] = defaultdict(list)
    statements: dict[str, list[int]] = defaultdict(list)
    profile = cProfile.Profile(time.process_time)
    last_queries: dict[str, list[str]] = {}

    counter = StatementCounter(connection, keep_sql=bool(args.queries))

    def timed(kind: str, *request) -> dict:
        kind_now[0] = kind
        with counter:
            started, started_wall = time.process_time(), time.perf_counter()
            if args.profile and args.profile in kind:
                profile.enable()
            status, headers = call(*request, csrf=csrf)
            profile.disable()
            cpu[kind].append(time.process_time() - started)
            wall[kind].append(time.perf_counter() - started_wall)
        statements[kind].append(len(counter.sql))
        if args.queries and args.queries in kind:
            last_queries[kind] = counter.sql
        assert status[:3] in ("200", "302"), (kind, status)
        return headers

    def attempt(student: int) -> None:
        """One attempt as a student's browser plays it: the start, answered by question 1, then
        each answer, whose response is its feedback page carrying the next question's form
        (the last one's, the results opening with its feedback)."""
        cookie = f"sessionid={sessions[student]}; csrftoken={csrf}"
        page = timed(START, "POST", f"/quiz/{placement}/start/", cookie)["body"].decode()
        public_id = load.ATTEMPT_ADDRESS.search(page)[1]
        attempt_path = f"/attempts/{public_id}/"
        requests = [
            # Each answered by its page (decision 57): the last one's is the results.
            (ANSWER if position < len(questions) else LAST_ANSWER, "POST",
             f"{attempt_path}answer/", f"question={question}&option={option}".encode())
            for position, (question, option) in enumerate(questions, start=1)
        ]  # fmt: skip
        # Beside them, not requests of the loop, what a reload of each kind of page costs
        # (READ_AGAIN): question 1 (the start's answer), question 1's feedback, the results.
        requests.insert(0, (QUESTION_PAGE, "GET", attempt_path, b""))
        requests.insert(2, (FEEDBACK_PAGE, "GET", f"{attempt_path}questions/1/feedback/", b""))
        requests.append((RESULTS_PAGE, "GET", f"{attempt_path}summary/", b""))
        for kind, method, path, body in requests:
            timed(kind, method, path, cookie, body)
        # The next attempt starts from the summary's "Start another attempt" (as in
        # bench.vs_moodle); the activity's page is a launch's landing, timed with the launches.

    browsers: dict[str, SimpleCookie] = defaultdict(SimpleCookie)
    started: set[str] = set()  # the launching users with an attempt in progress

    def launch(number: int) -> dict:
        """A launch: login, the platform's signed launch and, where it redirects, the
        landing page. Half the launching users have an attempt in progress (started in the
        warm-up), whose question the launch answers with (decision 60), and come back in the
        browser of their last launch, with its session (as bench.vs_moodle's openings do);
        the others land on the activity's page, each time in a new browser."""
        user_id = f"launch-{number % 20}"
        resuming = number % 20 < 10
        jar = browsers[user_id] if resuming else SimpleCookie()
        login = f"/lti/login/?{urlencode(platform.login_initiation(user_id=user_id))}"
        sent = "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items())
        headers = timed("launch 1: OIDC login", "GET", login, sent)
        _keep_cookies(jar, headers)
        auth = {k: v[0] for k, v in parse_qs(urlsplit(headers["Location"]).query).items()}
        form = platform.authorize(auth, user_id=user_id, roles=[ROLE + "Learner"], locale="en")
        cookie = "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items())
        outcome = "answered by the question" if resuming else "to the activity's page"
        headers = timed(f"launch 2: the signed launch, {outcome}", "POST", "/lti/launch/",
                        cookie, urlencode(form).encode())  # fmt: skip
        _check_answered(resuming and user_id in started, headers)
        _keep_cookies(jar, headers)
        jar["csrftoken"] = csrf  # the token this client sends (the launch rotated the cookie's)
        cookie = "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items())
        if "Location" in headers:
            timed("launch 3: the landing page (the activity's)", "GET", headers["Location"], cookie)
        return {
            "cookie": cookie,
            "resuming": resuming,
            "landing": headers.get("Location", ""),
            "user_id": user_id,
        }

    for number in range(max(args.students, 20)):  # warm-up: connections, caches, attempts
        if number < args.students:
            attempt(number)
        _start_if_resuming(call, csrf, launch(number), started)
    cpu.clear(), wall.clear(), statements.clear()
    parts.clear()
    for number in range(args.attempts):
        attempt(number % args.students)
        cookie = f"sessionid={sessions[number % args.students]}; csrftoken={csrf}"
        for _ in range(len(questions)):
            timed(TRIVIAL, "GET", "/healthz")
            timed(CONSTANT_PAGE, "GET", CONSTANT_PATH)
            timed(SIGNED_IN_PAGE, "GET", SIGNED_IN_PATH, cookie)
    for number in range(args.launches):
        launch(number)
    platform_server.stop()

    print(
        f"{args.attempts} attempts of {len(questions)} questions by {args.students} students; "
        f"one process, PostgreSQL and Redis on loopback; python {sys.version.split()[0]}"
        + (f"; without {', '.join(args.without)}" if args.without else "")
    )
    trivial = statistics.median(cpu[TRIVIAL])
    print(
        "| request | CPU ms (median) | times the trivial view | SQL statements | wall ms (median) |"
    )
    print("| --- | --- | --- | --- | --- |")
    for kind, times in cpu.items():
        print(
            f"| {kind} | {statistics.median(times) * 1000:.2f} | "
            f"{statistics.median(times) / trivial:.1f} | {statistics.mean(statements[kind]):.1f} |"
            f" {statistics.median(wall[kind]) * 1000:.2f} |"
        )
    attempt_seconds = sum(
        sum(times)
        for kind, times in cpu.items()
        if "launch" not in kind and kind not in (*FLOOR, *READ_AGAIN)
    )
    answers = args.attempts * len(questions)
    print(
        "\nper answer, the whole loop (the answer, answered by its feedback page with the next"
        " question, or by the results; the start, answered by question 1, shared out):"
        f" {attempt_seconds / answers * 1000:.2f} ms"
        f" = {attempt_seconds / answers / trivial:.1f} trivial views"
    )
    print(
        "per launch, its requests (medians): answered by the question"
        f" {_per_launch(cpu, 'answered by the question') * 1000:.2f} ms (two requests),"
        f" to the activity's page {_per_launch(cpu, 'activity') * 1000:.2f} ms (three)"
    )
    _print_parts(parts, cpu)
    _print_profile_and_queries(args, profile, last_queries)


if __name__ == "__main__":
    main()
