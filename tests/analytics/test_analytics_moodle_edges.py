"""Where Moodle's quiz statistics show nothing, ours show nothing too; instructors' own
attempts are left out as Moodle leaves out previews; and a wrong option that beats the key,
or draws the top of the class, is flagged."""

from __future__ import annotations

import pytest

from analytics.selectors import AttemptFilter, quiz_dashboard
from assessments.models import Attempt, Response
from lti.models import Membership, Role
from tests.analytics.test_analytics_statistics import compute
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.quiz_helpers import launched_client


@pytest.mark.parametrize("attempts", [1, 2])
def test_no_reliability_figures_below_three_attempts(attempts):
    matrix = [(1, 1, 0), (0, 0, 1)][:attempts]  # two totals that differ: V(T) > 0
    test, _items, _weights = compute(matrix)
    assert test.internal_consistency is None
    assert test.error_ratio is None
    assert test.standard_error is None


def test_reliability_figures_from_three_attempts():
    test, _items, _weights = compute([(1, 1, 0), (0, 1, 1), (1, 1, 1)])
    assert test.internal_consistency is not None
    assert test.error_ratio is not None


def test_no_discrimination_index_when_the_rest_of_the_test_does_not_vary():
    # The rest of the test is 0 for everyone. In floating point its variance came out as
    # 5.6e-17, not 0, and the page showed a discrimination index made of rounding residue.
    matrix = [(1, 0, 0, 0, 0, 0)] * 4 + [(0, 0, 0, 0, 0, 0)]
    _test, items, _weights = compute(matrix)
    assert items[0].facility == pytest.approx(80)
    assert items[0].discrimination_index is None
    assert items[0].discriminative_efficiency is None
    assert items[0].point_biserial == pytest.approx(1)  # the total itself varies


@pytest.fixture
def placement_with_class(db, fake_lms, quiz):  # noqa: ARG001
    placement = graded_placement(fake_lms, quiz)
    for number, correct in enumerate([8, 6, 5, 3, 1]):
        finish_attempt(student(placement, f"s{number}"), placement, correct=correct)
    return placement


def test_instructors_own_attempts_are_left_out(placement_with_class):
    before = quiz_dashboard(placement_with_class, AttemptFilter())
    teacher = student(placement_with_class, "teacher")
    Membership.objects.filter(user=teacher).update(role=Role.STAFF)
    finish_attempt(teacher, placement_with_class, correct=0)
    finish_attempt(teacher, placement_with_class, correct=8)
    after = quiz_dashboard(placement_with_class, AttemptFilter())
    assert Attempt.objects.filter(placement=placement_with_class).count() == 7
    assert after.statistics == before.statistics
    assert [row.statistics for row in after.questions] == [
        row.statistics for row in before.questions
    ]
    assert sum(started for _day, started, _finished in after.timeline) == 5
    for counting in ("first", "last", "highest"):
        counted = quiz_dashboard(
            placement_with_class, AttemptFilter(counting=counting)
        ).statistics.attempts
        assert counted == 5


def test_a_wrong_option_chosen_more_than_the_key_is_flagged_on_the_page(placement_with_class):
    question = placement_with_class.quiz_placement.quiz.current_version.questions.get(position=4)
    key = question.options.get(is_correct=True)
    lure = question.options.filter(is_correct=False).order_by("position").last()
    # Three of the five choose the lure, one the key: the lure beats the key.
    attempts = list(Attempt.objects.filter(placement=placement_with_class).order_by("-score"))
    for attempt in attempts[1:4]:
        Response.objects.filter(attempt=attempt, question=question).update(
            option=lure, is_correct=False
        )
    Response.objects.filter(attempt=attempts[0], question=question).update(
        option=key, is_correct=True
    )
    Response.objects.filter(attempt=attempts[4], question=question).update(
        option=question.options.filter(is_correct=False).exclude(pk=lure.pk).first(),
        is_correct=False,
    )
    dashboard = quiz_dashboard(placement_with_class, AttemptFilter())
    row = dashboard.questions[3]
    flagged = {option.key: option for option in row.options}
    assert flagged[lure.key].beats_key
    assert flagged[lure.key].chosen == 3
    assert not flagged[key.key].beats_key
    assert not flagged[key.key].attracts_strong_students
    assert row.flagged
    assert not dashboard.questions[0].flagged  # everyone chose its key

    teacher = student(placement_with_class, "teacher")
    Membership.objects.filter(user=teacher).update(role=Role.STAFF)
    client = launched_client(Membership.objects.get(user=teacher))
    html = client.get(f"/dashboard/{placement_with_class.pk}/").content.decode()
    table = html.split(f'id="distractors-{row.key}"')[1].split("</table>")[0]
    lure_row = table.split(f'data-option="{lure.key}"')[1].split("</tr>")[0]
    assert 'data-flag="beats-key"' in lure_row
    assert "<td data-share>60.0</td>" in lure_row  # a percentage, not 0.600
    assert table.count('data-flag="beats-key"') == 1
    scatter = html.split('id="chart-scatter"')[1].split("</script>")[0]
    assert '"label": "Q4"' in scatter.split("Flagged")[1]


def test_the_top_third_choosing_a_wrong_option_more_than_the_bottom_is_flagged(
    placement_with_class,
):
    question = placement_with_class.quiz_placement.quiz.current_version.questions.get(position=1)
    lure = question.options.filter(is_correct=False).order_by("position").last()
    strongest = Attempt.objects.filter(placement=placement_with_class).order_by("-score").first()
    Response.objects.filter(attempt=strongest, question=question).update(
        option=lure, is_correct=False
    )
    row = quiz_dashboard(placement_with_class, AttemptFilter()).questions[0]
    option = next(o for o in row.options if o.key == lure.key)
    assert option.share_top_third > option.share_bottom_third
    assert option.attracts_strong_students
    assert not option.beats_key
    assert row.flagged
