"""Dashboard speed at scale: 20,000 students and 160,000 responses in PostgreSQL.

    python -m bench.dashboard [--students 20000] [--repeats 7]

Builds a database of its own (gcquiz_bench on the local PostgreSQL, dropped and made
again), fills it with generate_demo_data (every student one attempt of eight answers), and
prints the server time of the instructor's dashboard page and of its API endpoint: the
median of several requests through Django's full stack (middleware, session, templates),
without network.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

BENCH_DATABASE = "gcquiz_bench"


def prepare_database(url: str, name: str = BENCH_DATABASE) -> None:
    admin = url.rsplit("/", 1)[0] + "/postgres"
    for sql in (
        f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
        f"CREATE DATABASE {name}",
    ):
        subprocess.run(["psql", admin, "-q", "-c", sql], check=True)


def demo_class(url: str, name: str, students: int, **demo_options) -> tuple:
    """A fresh database `name` at `url` with Django set up on it, the quiz loaded and a demo
    class of `students` in the demo placement: (placement, what was made, seconds taken)."""
    prepare_database(url, name)
    os.environ.update(DATABASE_URL=url, DEBUG="0", SECRET_KEY="bench", ALLOWED_HOSTS="testserver")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    from activities.demo import ensure_demo_placement
    from analytics.demo_data import generate_demo_data

    setup_test_environment()
    call_command("migrate", verbosity=0)
    call_command("load_quiz", verbosity=0)
    placement = ensure_demo_placement()
    started = time.perf_counter()
    made = generate_demo_data(placement, students, seed=1, **demo_options)
    return placement, made, time.perf_counter() - started


def vacuum(url: str) -> None:
    subprocess.run(["psql", url, "-q", "-c", "VACUUM ANALYZE"], check=True)


def timed(client, url: str, repeats: int) -> tuple[float, int, int]:
    client.get(url)  # warm: templates compiled, connection open, caches filled
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    return statistics.median(times), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    url = f"{args.server}/{BENCH_DATABASE}"
    placement, made, generated = demo_class(
        url, BENCH_DATABASE, args.students, absent_share=0, retake_share=0
    )
    vacuum(url)

    from activities.demo import enrol_demo_member
    from assessments.models import Response
    from lti.models import Role
    from tests.quiz_helpers import launched_client

    client = launched_client(enrol_demo_member(Role.STAFF))

    print(
        f"{made.students} students, {made.attempts} attempts, "
        f"{Response.objects.filter(attempt__placement=placement).count()} responses "
        f"(generated in {generated:.1f} s); median of {args.repeats} requests, in ms"
    )
    print("| request | median | min | max |")
    print("| --- | --- | --- | --- |")
    for label, path in (
        ("dashboard page", f"/dashboard/{placement.pk}/"),
        (
            "dashboard page, each student's first attempt",
            f"/dashboard/{placement.pk}/?attempts=first",
        ),
        ("API analytics", f"/api/v1/placements/{placement.pk}/analytics/"),
        (
            "API analytics, highest attempts",
            f"/api/v1/placements/{placement.pk}/analytics/?attempts=highest",
        ),
    ):
        median, low, high = timed(client, path, args.repeats)
        print(f"| {label} | {median:.0f} | {low:.0f} | {high:.0f} |")
    print(f"python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
