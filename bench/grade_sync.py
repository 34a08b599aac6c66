"""Grade-sync throughput: grades delivered per second by one Celery worker to a fast local
fake LMS (a real HTTP server on loopback), on PostgreSQL and Redis as in production, and the
token requests that took.

    make bench-sync            # or: python -m bench.grade_sync --grades 2000 --threads 8
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "gcquiz_bench"
POSTGRES = os.environ.get("BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432")
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grades", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8, help="worker pool threads")
    args = parser.parse_args()

    os.environ.update(
        DATABASE_URL=f"{POSTGRES}/{DATABASE}",
        REDIS_URL=REDIS,
        DEBUG="0",
        SECRET_KEY=os.environ.get("SECRET_KEY", "bench-only-not-secret"),
        DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING",
        GRADESYNC_REQUEUE_SECONDS="0",  # every pending row is due for the first enqueue
    )
    sys.path.insert(0, str(ROOT))
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")

    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_quiz", verbosity=0, stdout=open(os.devnull, "w"))  # noqa: SIM115
    cache.clear()

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from activities.models import Grade
    from assessments.models import Quiz
    from gradesync.models import GradeSync
    from gradesync.services import requeue_due
    from lti.keys import published_jwks
    from lti.models import LtiUser
    from tests.fake_lms import FakeLms
    from tests.grades_helpers import graded_placement
    from tests.workers import start_worker, stop

    lms = FakeLms()
    lms.tool_jwks = published_jwks()
    placement = graded_placement(lms, Quiz.objects.get())
    registration = placement.context.deployment.registration
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"bench-{n}") for n in range(args.grades)
    )
    LtiUser.objects.bulk_create(
        LtiUser(registration=registration, sub=f"u{n}", user=user) for n, user in enumerate(users)
    )
    now = timezone.now()
    grades = Grade.objects.bulk_create(
        Grade(
            user=user,
            placement=placement,
            score_given=n % 9,
            score_maximum=8,
            grading_method="highest",
            attempt_count=1,
            updated_at=now,
        )
        for n, user in enumerate(users)
    )
    GradeSync.objects.bulk_create(
        GradeSync(
            grade=grade,
            user_id=grade.user_id,
            placement=placement,
            score_given=grade.score_given,
            score_maximum=8,
            changed_at=now,
            next_attempt_at=now,
        )
        for grade in grades
    )

    worker = start_worker(
        "celery", {"GRADESYNC_REQUEUE_SECONDS": "30"}, pool="threads", concurrency=args.threads
    )
    try:
        time.sleep(3)  # worker start-up is not delivery time
        started = time.perf_counter()
        requeue_due(limit=args.grades)
        deadline = started + 300
        while GradeSync.objects.filter(state="pending").exists():
            if time.perf_counter() > deadline:
                raise SystemExit("grades still pending after 300 s")
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
    finally:
        stop(worker)
        lms.stop()
    delivered = GradeSync.objects.filter(state="synced").count()
    print(f"{'grades delivered':<28}{delivered}")
    print(f"{'seconds':<28}{elapsed:.2f}")
    print(f"{'grades per second':<28}{delivered / elapsed:.0f}")
    print(f"{'token requests':<28}{lms.token_requests}")
    print(f"{'worker':<28}1 process, {args.threads} threads")


if __name__ == "__main__":
    main()
