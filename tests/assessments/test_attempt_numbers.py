"""An attempt's number follows the student's highest, whatever became of earlier ones, and
attempts are graded data: the admin shows them and changes none (decision 28)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError
from django.urls import reverse

from activities.models import Grade
from assessments import services
from assessments.models import Attempt, AttemptState
from assessments.selectors import current_version
from tests.quiz_helpers import answer_all, start, started_attempt
from tests.threads import hold_uncommitted


def finished_twice(learner_client, placement) -> tuple[Attempt, Attempt]:
    """8/8 first, then 0/8."""
    first = start(learner_client, placement.pk)
    answer_all(learner_client, first, lambda _question: True)
    second = start(learner_client, placement.pk)
    answer_all(learner_client, second, lambda _question: False)
    return first, second


@pytest.mark.django_db
def test_an_attempt_cannot_be_deleted_added_or_edited_in_the_admin(
    learner, learner_client, placement, admin_client
):
    """Found by review: deleting an attempt in the admin left the grade it made, and every
    later start of the student failed with a server error."""
    first, _second = finished_twice(learner_client, placement)
    grade = Grade.objects.get(user=learner, placement=placement).score_given
    delete_url = reverse("admin:assessments_attempt_delete", args=[first.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 403
    bulk = admin_client.post(
        reverse("admin:assessments_attempt_changelist"),
        {"action": "delete_selected", "_selected_action": [first.pk], "post": "yes"},
    )
    assert bulk.status_code in {200, 302}  # no such action: nothing selected is deleted
    change_url = reverse("admin:assessments_attempt_change", args=[first.pk])
    assert admin_client.get(change_url).status_code == 200  # shown
    assert admin_client.post(change_url, {"state": "in_progress", "score": "0"}).status_code == 403
    assert admin_client.get(reverse("admin:assessments_attempt_add")).status_code == 403
    first.refresh_from_db()
    assert (first.state, first.score) == (AttemptState.FINISHED, 8)
    assert Grade.objects.get(user=learner, placement=placement).score_given == grade
    third = start(learner_client, placement.pk)
    assert third.number == 3


@pytest.mark.django_db
def test_a_start_after_an_earlier_attempt_was_removed_takes_the_next_number(
    learner, learner_client, placement
):
    """An attempt gone from the middle (a shell, a cascade): the next start numbers after
    the highest left, not after how many are left."""
    first, second = finished_twice(learner_client, placement)
    first.delete()
    third = start(learner_client, placement.pk)
    assert (third.number, third.state) == (3, AttemptState.IN_PROGRESS)
    assert list(
        Attempt.objects.filter(user=learner, placement=placement)
        .order_by("number")
        .values_list("number", flat=True)
    ) == [second.number, 3]


@pytest.mark.django_db(transaction=True)
def test_a_start_that_meets_a_taken_number_and_no_attempt_in_progress_starts_the_next(
    learner, placement
):
    """The number the start chose was taken by an attempt it could not see yet, one that is
    not in progress: it reads again and starts the next, rather than resuming nothing."""

    def finished_elsewhere() -> None:
        version = current_version(placement.quiz_placement.quiz)
        Attempt.objects.create(
            user=learner,
            placement=placement,
            quiz_version=version,
            number=1,
            language="en",
            option_order={},
            max_score=8,
            state=AttemptState.FINISHED,
            score=8,
        )

    committed = hold_uncommitted(finished_elsewhere)
    attempt = started_attempt(learner, placement)
    committed()
    assert (attempt.number, attempt.state) == (2, AttemptState.IN_PROGRESS)


@pytest.mark.django_db
def test_a_start_that_keeps_losing_races_is_refused_with_a_message(
    learner_client, placement, monkeypatch
):
    """Never a server error: after a few lost races the student is told to try again."""

    def always_taken(_attempt: Attempt) -> Attempt:
        raise IntegrityError("attempt_unique_number")

    monkeypatch.setattr(services, "insert_row", always_taken)
    refused = learner_client.post(reverse("assessments:start", args=[placement.pk]))
    assert refused.status_code == 409
    assert "Please try again." in refused.content.decode()
    assert not Attempt.objects.exists()
