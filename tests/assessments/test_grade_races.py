"""A student's first grade and a staff override of it, at the same moment."""

from __future__ import annotations

from decimal import Decimal

import pytest

from activities.models import Grade, GradeOverride
from activities.services import override_grade
from assessments.models import Attempt, AttemptState
from assessments.services import refresh_grade
from tests.grades_helpers import graded_placement, student
from tests.threads import hold_uncommitted


@pytest.mark.django_db(transaction=True)
def test_an_override_racing_the_first_grade_waits_instead_of_failing(fake_lms, quiz):
    placement = graded_placement(fake_lms, quiz)
    learner, teacher = student(placement, "s"), student(placement, "t")
    Attempt.objects.create(
        user=learner,
        placement=placement,
        quiz_version=quiz.current_version,
        number=1,
        state=AttemptState.FINISHED,
        language="en",
        option_order={},
        score=6,
        max_score=8,
    )
    # The first grade's new row, uncommitted, while staff override it.
    committed = hold_uncommitted(lambda: refresh_grade(user=learner, placement_id=placement.pk))
    override_grade(
        placement=placement,
        user=learner,
        score_given=Decimal("3"),
        reason="late penalty",
        actor=teacher,
    )
    committed()
    grade = Grade.objects.get()
    assert grade.score_given == Decimal(3)
    assert grade.is_overridden
    assert GradeOverride.objects.get().previous_score == Decimal(6)
