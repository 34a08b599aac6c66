"""The review of a finished attempt, as Moodle's review page shows it: score, percentage,
the grade under the placement's method, start, finish, time taken, a verdict per question
linking to its feedback and explanation, and another attempt when one is allowed."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from assessments.models import Response
from tests.quiz_helpers import answer_all, start

pytestmark = pytest.mark.django_db

RIGHT = {1, 3, 4}


def fact(html: str, name: str) -> str:
    found = re.search(rf'data-fact="{name}">(.*?)</td>', html, re.S)
    assert found, name
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


@pytest.mark.usefixtures("learner")
def test_review_figures_match_the_attempt(learner_client, placement):
    placement.placement.max_attempts = 2
    placement.placement.grading_method = "average"
    placement.placement.save()
    first = start(learner_client, placement.pk)
    answer_all(learner_client, first, lambda _q: True)  # 8 of 8
    second = start(learner_client, placement.pk)
    answer_all(learner_client, second, lambda q: q.position in RIGHT)  # 3 of 8
    second.refresh_from_db()
    finished = timezone.now() - timedelta(days=1)
    second.started_at = finished - timedelta(minutes=5, seconds=7)
    second.finished_at = finished
    second.save()

    url = reverse("assessments:summary", args=[second.public_id])
    html = learner_client.get(url).content.decode()
    assert "Your score: 3 of 8" in html
    assert fact(html, "marks") == "3 / 8"
    assert fact(html, "percent") == "37.5%"
    # The grade is the average of 8 and 3 (the placement's method), not this attempt's.
    given, maximum, percent = re.match(
        r"([\d.]+) / ([\d.]+) \(([\d.]+)%\)", fact(html, "grade")
    ).groups()
    assert (float(given), float(maximum)) == (5.5, 8)
    assert float(percent) == pytest.approx(68.75, abs=0.05)  # the gradebook's rounding rule
    assert "Average of attempts" in fact(html, "method")
    assert fact(html, "time-taken") == "5 minutes 7 seconds"
    assert f'datetime="{second.started_at.isoformat()}"' in html
    assert f'datetime="{second.finished_at.isoformat()}"' in html

    verdicts = re.findall(r'href="#question-(\d+)"[^>]*data-verdict="(\w+)"', html)
    responses = Response.objects.filter(attempt=second).order_by("question__position")
    assert verdicts == [
        (str(r.question.position), "correct" if r.is_correct else "wrong") for r in responses
    ]
    assert [int(p) for p, verdict in verdicts if verdict == "correct"] == sorted(RIGHT)
    for position, _verdict in verdicts:  # each link lands on the question with its explanation
        section = html.split(f'id="question-{position}"')[1].split('id="question-')[0]
        assert 'class="explanation"' in section
    assert "Start another attempt" not in html  # two of two attempts used
    assert "You have used all your attempts." in html

    placement.placement.max_attempts = 3
    placement.placement.save()
    html = learner_client.get(url).content.decode()
    assert 'id="start-another"' in html


def test_time_taken_reads_in_russian_plural_forms(learner_client, placement):
    attempt = start(learner_client, placement.pk)
    answer_all(learner_client, attempt, lambda _q: False)
    attempt.refresh_from_db()
    url = reverse("assessments:summary", args=[attempt.public_id])
    for taken, expected in [
        (timedelta(minutes=2, seconds=1), "2 минуты 1 секунда"),
        (timedelta(minutes=5, seconds=22), "5 минут 22 секунды"),
        (timedelta(hours=1, minutes=21), "1 час 21 минута"),
    ]:
        attempt.started_at = attempt.finished_at - taken
        attempt.save()
        with translation.override("ru"):  # the request's language ends with the test
            html = learner_client.get(url, HTTP_ACCEPT_LANGUAGE="ru").content.decode()
        assert fact(html, "time-taken") == expected
        assert fact(html, "percent") == "0,0%"


def test_each_student_reads_their_own_grade_and_no_one_elses(learner_client, placement):
    """The grade is read with the activity's page and the results in one statement: joined
    on the student as well as the placement, or a classmate's grade would show."""
    from activities.demo import enrol_demo_member
    from lti.models import Role
    from tests.quiz_helpers import launched_client

    first = start(learner_client, placement.pk)
    answer_all(learner_client, first, lambda _q: True)  # 8 of 8
    classmate = launched_client(enrol_demo_member(Role.LEARNER))
    theirs = start(classmate, placement.pk)
    activity_page = reverse("assessments:placement", args=[placement.pk])
    page = classmate.get(activity_page).content.decode()
    assert re.search(r'<dd id="grade">Not graded yet</dd>', page), page
    answer_all(classmate, theirs, lambda q: q.position in RIGHT)  # 3 of 8
    results = classmate.get(reverse("assessments:summary", args=[theirs.public_id]))
    assert fact(results.content.decode(), "grade").startswith("3.00 / 8.00 (37.50%)")
    page = learner_client.get(activity_page).content.decode()
    assert re.search(r"<dd id=\"grade\">8.00 / 8.00 \(100(.00)?%\)", page), page
