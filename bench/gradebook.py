"""The instructor's grades page at the size of a large class: 2,000 students.

    python -m bench.gradebook [--students 2000] [--repeats 7]

Builds a database of its own (gcquiz_bench_gradebook on the local PostgreSQL, dropped and
made again), fills a course with generate_demo_data (some students never start, a fifth
take the quiz twice), overrides a few grades, and prints the server time of the grades page
(first page, sorted by grade, a search, a late page), of the regrade preview and of the API's
grade list: the median of several requests through Django's full stack (middleware, session,
templates), without network.
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.dashboard import demo_class, timed, vacuum

BENCH_DATABASE = "gcquiz_bench_gradebook"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    url = f"{args.server}/{BENCH_DATABASE}"
    placement, made, generated = demo_class(url, BENCH_DATABASE, args.students)

    from activities.demo import enrol_demo_member
    from activities.models import Grade
    from activities.services import override_grade
    from assessments.selectors import placed_quiz
    from assessments.services import change_quiz_settings
    from lti.models import Role

    teacher = enrol_demo_member(Role.STAFF)
    for grade in Grade.objects.filter(placement=placement).select_related("user")[:20]:
        override_grade(
            placement=placement,
            user=grade.user,
            score_given=grade.score_maximum,
            reason="bench",
            actor=teacher.user,
        )
    vacuum(url)

    from tests.quiz_helpers import launched_client

    client = launched_client(teacher)
    grades = f"/placements/{placement.pk}/grades/"
    print(
        f"{made.students} students, {made.attempts} attempts "
        f"(generated in {generated:.1f} s); median of {args.repeats} requests, in ms"
    )
    print("| request | median | min | max |")
    print("| --- | --- | --- | --- |")
    for label, path in (
        ("grades page, first page by name", grades),
        ("grades page, sorted by grade (highest first)", f"{grades}?sort=-grade"),
        ("grades page, sorted by sync state", f"{grades}?sort=sync"),
        ("grades page, a search", f"{grades}?q=an"),
        ("grades page, page 30", f"{grades}?page=30"),
        ("regrade preview", f"{grades}regrade/"),
        ("API grades, 500 a page", f"/api/v1/grades/?placement={placement.pk}&page_size=500"),
    ):
        median, low, high = timed(client, path, args.repeats)
        print(f"| {label} | {median:.0f} | {low:.0f} | {high:.0f} |")
    for method in ("last", "highest"):
        started = time.perf_counter()
        regrade = change_quiz_settings(
            placement,
            actor=teacher.user,
            quiz=placed_quiz(placement),
            title=placement.title,
            max_attempts=0,
            grading_method=method,
        )
        took = (time.perf_counter() - started) * 1000
        print(
            f"grading method changed to {method}: {regrade.grades_changed} of "
            f"{Grade.objects.filter(placement=placement).count()} grades changed, "
            f"regraded in one transaction in {took:.0f} ms"
        )
    print(f"python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
