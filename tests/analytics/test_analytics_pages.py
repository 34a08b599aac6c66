"""Dashboards over the database: the SQL aggregates give the same statistics as the
per-attempt data, the filters pick the right attempts, the query count does not grow with
the class, exports stream and parse, and only the course's staff get in."""

from __future__ import annotations

import csv
import dataclasses
import io
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from analytics.selectors import AttemptFilter, counted_attempts, quiz_dashboard
from assessments.models import Attempt, Response
from assessments.services import load_quiz
from gradesync.models import GradeSync, SyncState
from labs.models import LabRun, RunStatus
from lti.models import Membership, ResourceLink, Role
from tests.analytics.test_analytics_statistics import compute
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.labs_helpers import small_lab
from tests.quiz_helpers import launched_client
from tests.statements import page_statements

# (correct answers on the first attempt, on a second attempt or None)
CLASS = [(8, None), (7, 3), (6, None), (5, 8), (5, None), (4, None), (3, 6), (2, None), (0, 1)]


@pytest.fixture
def dashboard_class(db, fake_lms, quiz):  # noqa: ARG001
    placement = graded_placement(fake_lms, quiz)
    students = []
    for number, (first, second) in enumerate(CLASS):
        user = student(placement, f"s{number}")
        finish_attempt(user, placement, correct=first)
        if second is not None:
            finish_attempt(user, placement, correct=second)
        students.append(user)
    student(placement, "absent")  # on the roster, never started
    teacher = student(placement, "teacher")
    Membership.objects.filter(user=teacher).update(role=Role.STAFF)
    return placement, students, launched_client(Membership.objects.get(user=teacher))


def download_csv(client, url: str) -> list[dict[str, str]]:
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def assert_close(actual, expected, **replaced) -> None:
    """Dataclass fields equal up to floating-point summation order."""
    wanted = {**asdict(expected), **replaced}
    for name, value in asdict(actual).items():
        if wanted[name] is None or value is None:
            assert value == wanted[name], name
        else:
            assert value == pytest.approx(wanted[name], rel=1e-12, abs=1e-12), name


def matrix_of(attempts) -> list[tuple[int, ...]]:
    """Per attempt, its answers in question order as 0/1: straight from the rows."""
    rows = []
    for attempt in attempts:
        answers = Response.objects.filter(attempt=attempt).order_by("question__position")
        rows.append(tuple(int(r.is_correct) for r in answers))
    return rows


@pytest.mark.parametrize("counting", ["all", "first", "last", "highest"])
def test_dashboard_statistics_equal_the_per_attempt_computation(dashboard_class, counting):
    placement, _students, _client = dashboard_class
    dashboard = quiz_dashboard(placement, AttemptFilter(counting=counting))
    every = Attempt.objects.filter(placement=placement).order_by("user_id", "number")
    by_user: dict[int, list[Attempt]] = {}
    for attempt in every:
        by_user.setdefault(attempt.user_id, []).append(attempt)
    chosen = {
        "all": list(every),
        "first": [attempts[0] for attempts in by_user.values()],
        "last": [attempts[-1] for attempts in by_user.values()],
        "highest": [
            max(attempts, key=lambda a: (a.score, -a.number)) for attempts in by_user.values()
        ],
    }[counting]
    assert set(counted_attempts(placement, AttemptFilter(counting=counting))) == set(chosen)

    expected_test, expected_items, expected_weights = compute(matrix_of(chosen), options=4)
    assert_close(dashboard.statistics, expected_test)
    for row, expected, weight in zip(
        dashboard.questions, expected_items, expected_weights, strict=True
    ):
        assert_close(row.statistics, expected, effective_weight=weight)
    totals = sorted(a.score for a in chosen)
    assert [count for _score, count in dashboard.histogram] == [totals.count(s) for s in range(9)]


def test_distractors_flags_languages_roster_and_time(dashboard_class):
    placement, students, _client = dashboard_class
    dashboard = quiz_dashboard(placement, AttemptFilter())
    q1 = dashboard.questions[0]
    assert sum(option.chosen for option in q1.options) == q1.answered == 13
    assert sum(option.share for option in q1.options) == pytest.approx(1)
    # finish_attempt always picks the first wrong option: the others are never chosen.
    never = [o for o in q1.options if o.never_chosen]
    assert never
    assert all(not o.is_correct for o in never)
    assert dashboard.languages == [("en", 13)]
    assert dashboard.not_attempted_count == 1
    assert all(
        row.mean_seconds is not None and row.mean_seconds >= 0 for row in dashboard.questions
    )
    # The last question is answered right only by the strongest: its top third chooses
    # the right option more than the bottom third does.
    q8 = dashboard.questions[-1]
    right = next(o for o in q8.options if o.is_correct)
    assert right.share_top_third > right.share_bottom_third
    # A wrong option chosen only by strong students is flagged.
    lure = next(o for o in q1.options if o.never_chosen)
    question = placement.quiz_placement.quiz.current_version.questions.get(position=1)
    Response.objects.filter(attempt__score__gte=7, question=question).update(
        option=question.options.get(key=lure.key), is_correct=False
    )
    flagged = quiz_dashboard(placement, AttemptFilter()).questions[0]
    assert any(o.attracts_strong_students for o in flagged.options)


def test_date_range_and_sync_summary(dashboard_class):
    placement, students, _client = dashboard_class
    old = Attempt.objects.filter(user=students[0]).get()
    Attempt.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=30))
    recent = AttemptFilter(finished_after=timezone.now() - timedelta(days=7))
    assert old not in counted_attempts(placement, recent)
    assert quiz_dashboard(placement, recent).statistics.attempts == 12
    GradeSync.objects.filter(user=students[1]).update(
        state=SyncState.FAILED, last_error="HTTP 400: line item closed"
    )
    sync = quiz_dashboard(placement, AttemptFilter()).sync
    assert sync.failed == 1
    assert sync.failure_reasons == [("HTTP 400: line item closed", 1)]
    assert sync.synced + sync.pending + sync.failed == len(students)


def test_dashboard_query_count_does_not_grow_with_the_class(dashboard_class):
    placement, _students, client = dashboard_class
    url = f"/dashboard/{placement.pk}/"
    client.get(url)  # the session's first request also refreshes the session row
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    for number in range(30):
        user = student(placement, f"extra{number}")
        finish_attempt(user, placement, correct=number % 9)
    with CaptureQueriesContext(connection) as large:
        assert client.get(url).status_code == 200
    assert len(page_statements(large)) == len(page_statements(small))
    with CaptureQueriesContext(connection) as filtered:
        assert client.get(url + "?attempts=highest&finished_from=2020-01-01").status_code == 200
    assert len(page_statements(filtered)) == len(page_statements(small))


def test_dashboard_page_and_its_csv_exports(dashboard_class):
    placement, students, client = dashboard_class
    page = client.get(f"/dashboard/{placement.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-stat="attempts">13<' in html
    assert 'data-chart="histogram"' in html
    assert 'id="chart-histogram"' in html
    assert "chart.umd.min.js" in html

    rows = download_csv(client, f"/dashboard/{placement.pk}/responses.csv")
    assert len(rows) == Response.objects.count() == 13 * 8
    assert {row["question"] for row in rows} == {f"q{n}" for n in range(1, 9)}
    assert rows[0]["student"]
    assert rows[0]["is_correct"] in ("True", "False")
    attempts = download_csv(client, f"/dashboard/{placement.pk}/attempts.csv")
    assert sorted(int(row["score"]) for row in attempts) == sorted(
        Attempt.objects.values_list("score", flat=True)
    )
    grades = download_csv(client, f"/dashboard/{placement.pk}/grades.csv")
    assert len(grades) == len(students)
    assert client.get(f"/dashboard/{placement.pk}/runs.csv").status_code == 404

    bad = client.get(f"/dashboard/{placement.pk}/?finished_from=2026-02-30&attempts=worst")
    assert bad.status_code == 400
    assert "Enter a valid date" in bad.content.decode()


@pytest.mark.parametrize(
    ("title", "disposition"),
    [
        ("Quiz 1: basics", 'attachment; filename="quiz-1-basics-grades.csv"'),
        (
            "Контрольная работа",
            "attachment; filename*=utf-8''%D0%BA%D0%BE%D0%BD%D1%82%D1%80%D0%BE%D0%BB%D1%8C"
            "%D0%BD%D0%B0%D1%8F-%D1%80%D0%B0%D0%B1%D0%BE%D1%82%D0%B0-grades.csv",
        ),
        ("!!!", 'attachment; filename="activity-{pk}-grades.csv"'),
    ],
)
def test_an_export_is_named_after_its_activity_in_any_script(dashboard_class, title, disposition):
    """Found by review: a title in Cyrillic, likely in a Russian course, slugified to nothing
    and every export of the activity downloaded as "-grades.csv"."""
    placement, _students, client = dashboard_class
    ResourceLink.objects.filter(pk=placement.pk).update(title=title)
    response = client.get(f"/dashboard/{placement.pk}/grades.csv")
    assert response.status_code == 200
    assert response["Content-Disposition"] == disposition.format(pk=placement.pk)


def test_only_the_courses_staff_see_dashboards(dashboard_class):
    placement, students, _client = dashboard_class
    learner = launched_client(Membership.objects.get(user=students[0]))
    refused = learner.get(f"/dashboard/{placement.pk}/")
    assert refused.status_code == 403
    assert "instructors" in refused.content.decode()
    assert learner.get(f"/dashboard/{placement.pk}/grades.csv").status_code == 403
    from django.test import Client

    assert Client().get(f"/dashboard/{placement.pk}/").status_code == 403


def test_api_serves_the_dashboards_numbers(dashboard_class):
    placement, _students, client = dashboard_class
    body = client.get(f"/api/v1/placements/{placement.pk}/analytics/?attempts=first").json()
    dashboard = quiz_dashboard(placement, AttemptFilter(counting="first"))
    assert body["counting"] == "first"
    assert body["statistics"]["internal_consistency"] == pytest.approx(
        dashboard.statistics.internal_consistency
    )
    q3 = next(q for q in body["questions"] if q["key"] == "q3")
    assert q3["statistics"]["discrimination_index"] == pytest.approx(
        dashboard.questions[2].statistics.discrimination_index
    )
    assert body["not_attempted"] == 1
    # Every counted attempt is in the histogram, one from a longer earlier version too.
    Attempt.objects.filter(pk=Attempt.objects.filter(placement=placement).first().pk).update(
        score=10, max_score=10
    )
    body = client.get(f"/api/v1/placements/{placement.pk}/analytics/").json()
    histogram = {row["score"]: row["count"] for row in body["score_histogram"]}
    assert sum(histogram.values()) == body["finished"]
    assert histogram[10] == 1
    assert set(histogram) == set(range(11))
    bad = client.get(f"/api/v1/placements/{placement.pk}/analytics/?attempts=worst")
    assert bad.status_code == 400


@pytest.mark.usefixtures("db", "quiz")
def test_lab_dashboard(fake_lms):
    lab = small_lab()
    placement = graded_placement(fake_lms, lab)
    teacher = student(placement, "t")
    Membership.objects.filter(user=teacher).update(role=Role.STAFF)
    now = timezone.now()
    frontier = [
        {"peak_activation_bytes": 2056, "recompute_flops": 8000},
        {"peak_activation_bytes": 4616, "recompute_flops": 0},
    ]
    for number, (status, peak, within, error) in enumerate(
        [
            (RunStatus.SUCCEEDED, 3000, True, ""),
            (RunStatus.SUCCEEDED, 5000, False, ""),
            (RunStatus.REJECTED, None, None, "segment 0–9 overlaps"),
            (RunStatus.INFRASTRUCTURE_FAILED, None, None, "killed by signal 9"),
            (RunStatus.QUEUED, None, None, ""),
        ]
    ):
        user = student(placement, f"s{number}")
        LabRun.objects.create(
            placement=placement,
            user=user,
            number=1,
            policy={"kind": "sqrt"},
            submitted_at=now - timedelta(seconds=60),
            # waits of 10, 14, 18 and 22 s; runs of 30, 26, 22 and 18 s
            started_at=None
            if status == RunStatus.QUEUED
            else now - timedelta(seconds=50 - 4 * number),
            finished_at=None if status == RunStatus.QUEUED else now - timedelta(seconds=20),
            next_attempt_at=now,
            status=status,
            device="cpu" if peak else "",
            score=0.5 if peak else None,
            error=error,
            result=None
            if peak is None
            else {
                "peak_activation_bytes": peak,
                "recompute_flops": 4000,
                "within_budget": within,
                "baseline_peak_activation_bytes": 4616,
                "reference": {"frontier": frontier},
            },
        )
    # The instructor's own tries are not a student's work (as the quiz leaves out theirs).
    for number, (status, error) in enumerate(
        [(RunStatus.SUCCEEDED, ""), (RunStatus.REJECTED, "the instructor's own try")], start=1
    ):
        LabRun.objects.create(
            placement=placement,
            user=teacher,
            number=number,
            policy={"kind": "none"},
            submitted_at=now - timedelta(seconds=600),
            started_at=now - timedelta(seconds=10),
            finished_at=now,
            next_attempt_at=now,
            status=status,
            device="cpu",
            score=1 if not error else None,
            error=error,
            result=None
            if error
            else {"peak_activation_bytes": 2000, "recompute_flops": 0, "within_budget": True},
        )
    client = launched_client(Membership.objects.get(user=teacher))
    html = client.get(f"/dashboard/{placement.pk}/").content.decode()
    assert "the instructor&#x27;s own try" not in html
    assert 'data-stat="runs">5<' in html
    assert 'data-stat="measured">2<' in html
    assert 'data-stat="within-budget">50.0%<' in html
    assert "overlaps" in html
    assert "killed by signal 9" in html
    body = client.get(f"/api/v1/placements/{placement.pk}/lab-analytics/").json()
    assert body["share_within_budget"] == 0.5
    assert body["queued"] == 1
    assert len(body["points"]) == 2
    assert body["frontier"] == frontier
    assert body["mean_wait_seconds"] == pytest.approx(16)
    assert body["run_seconds_by_device"] == {"cpu": pytest.approx(56), "—": pytest.approx(40)}
    runs = download_csv(client, f"/dashboard/{placement.pk}/runs.csv")
    assert len(runs) == 7  # the export is every run, as the quiz's is every attempt
    assert {row["status"] for row in runs} >= {"succeeded", "rejected"}
    assert [row["role"] for row in runs].count("staff") == 2  # the instructor's own, marked
    assert client.get(f"/dashboard/{placement.pk}/responses.csv").status_code == 404


@pytest.mark.usefixtures("quiz")
def test_demo_data_makes_statistics_that_mean_something():
    call_command("generate_demo_data", "--students", "300", "--seed", "3")
    from activities.demo import ensure_demo_placement

    dashboard = quiz_dashboard(ensure_demo_placement(), AttemptFilter(counting="first"))
    assert 270 <= dashboard.statistics.attempts <= 300
    assert dashboard.statistics.internal_consistency > 30
    assert all(row.statistics.discrimination_index > 0 for row in dashboard.questions)
    assert dashboard.not_attempted_count > 0


def test_the_served_chart_library_is_the_pinned_package():
    served = Path(settings.BASE_DIR) / "analytics/static/analytics/vendor/chart.umd.min.js"
    installed = Path(settings.BASE_DIR) / "node_modules/chart.js/dist/chart.umd.min.js"
    assert installed.exists(), "make test installs the pinned front-end packages (npm ci)"
    assert served.read_bytes() == installed.read_bytes()


def test_extreme_dates_and_formula_like_names_are_handled(dashboard_class):
    placement, students, client = dashboard_class
    for url in (
        f"/dashboard/{placement.pk}/?finished_to=9999-12-31",
        f"/api/v1/placements/{placement.pk}/analytics/?finished_to=9999-12-31",
    ):
        assert client.get(url).status_code == 400, url
    lti_user = students[0].lti_user
    lti_user.name = '=HYPERLINK("http://evil")'
    lti_user.save()
    grades = download_csv(client, f"/dashboard/{placement.pk}/grades.csv")
    assert '\'=HYPERLINK("http://evil")' in {row["student"] for row in grades}


def test_every_export_says_each_rows_course_role(dashboard_class):
    """The dashboards leave the staff's own attempts and runs out; the files keep every row,
    so each says whose it is (a teacher previewing is not a student)."""
    placement, students, client = dashboard_class
    teacher = Membership.objects.get(context=placement.context, role=Role.STAFF).user
    finish_attempt(teacher, placement, correct=8)
    for kind in ("attempts", "responses", "grades"):
        rows = download_csv(client, f"/dashboard/{placement.pk}/{kind}.csv")
        roles = {row["user_id"]: row["role"] for row in rows}
        assert roles[str(teacher.pk)] == "staff", kind
        assert roles[str(students[0].pk)] == "learner", kind
        assert set(roles.values()) == {"staff", "learner"}, kind


def test_the_dashboard_of_a_placement_re_pointed_at_another_quiz_counts_all_its_attempts(
    dashboard_class, seed_content
):
    """Found by review: an instructor re-pointed a placement with finished attempts at another
    quiz, and its dashboard (where a staff launch lands) answered 500: the answers' questions
    were looked up in the new quiz alone. The dashboard counts the placement's attempts as its
    grades do, the answers named by their questions' keys whichever quiz those were in."""
    placement, _students, teacher = dashboard_class
    other = load_quiz(dataclasses.replace(seed_content, slug="another-quiz")).quiz
    saved = teacher.post(
        reverse("assessments:manage", args=[placement.pk]),
        {"quiz": other.pk, "title": "Re-pointed", "max_attempts": 0, "grading_method": "highest"},
    )
    assert saved.status_code == 302
    newcomer = student(placement, "newcomer")
    finish_attempt(newcomer, placement, correct=4)

    page = teacher.get(reverse("analytics:dashboard", args=[placement.pk]))

    assert page.status_code == 200
    dashboard = quiz_dashboard(ResourceLink.objects.get(pk=placement.pk), AttemptFilter())
    assert dashboard.statistics.attempts == 14  # the class's 13 and the newcomer's
    assert dashboard.histogram[4] == (4, 2)  # one of the class's, and the newcomer's
    assert next(row for row in dashboard.questions if row.key == "q1").answered == 14
