"""Delivering grades over AGS to a fake LMS that is a real HTTP server on loopback."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from activities.models import Grade
from gradesync import services
from gradesync.models import GradeSync, SyncState
from lti import claims as c
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.quiz_helpers import launched_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced_placement(fake_lms, quiz):
    return graded_placement(fake_lms, quiz)


def deliver_all() -> list[str]:
    return [services.deliver(sync.pk) for sync in GradeSync.objects.order_by("pk")]


def test_finishing_an_attempt_writes_the_grade_and_its_sync_record_together(synced_placement):
    user = student(synced_placement, "s1")
    finish_attempt(user, synced_placement, correct=6)
    grade = Grade.objects.get(user=user)
    sync = GradeSync.objects.get()
    assert (sync.grade, sync.score_given, sync.score_maximum) == (grade, Decimal(6), Decimal(8))
    assert sync.changed_at == grade.updated_at
    assert sync.state == SyncState.PENDING


def test_a_score_reaches_the_lms_with_the_grade_change_time(synced_placement, fake_lms):
    user = student(synced_placement, "s1")
    finish_attempt(user, synced_placement, correct=5)
    assert deliver_all() == ["synced"]
    (((lineitem, user_id), score),) = fake_lms.scores.items()
    assert user_id == "s1"
    assert synced_placement.lineitem_url.endswith(f"/lineitems/{lineitem}")
    grade = Grade.objects.get()
    assert score["scoreGiven"] == 5.0
    assert score["scoreMaximum"] == 8.0
    assert score["activityProgress"] == "Completed"
    assert score["gradingProgress"] == "FullyGraded"
    assert score["timestamp"] == grade.updated_at.isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )
    assert "https://canvas.instructure.com/lti/submission" not in score
    sync = GradeSync.objects.get()
    assert sync.state == SyncState.SYNCED
    assert sync.tries == 1
    assert sync.synced_at


def test_canvas_gets_its_submission_extension(fake_lms, quiz):
    synced_placement = graded_placement(fake_lms, quiz, product="canvas")
    finish_attempt(student(synced_placement, "s1"), synced_placement, correct=8)
    deliver_all()
    (score,) = fake_lms.scores.values()
    extension = score["https://canvas.instructure.com/lti/submission"]
    assert extension["new_submission"] is True
    assert extension["submitted_at"] == score["timestamp"]


def test_deliveries_within_the_token_lifetime_use_one_token(synced_placement, fake_lms):
    for number in range(5):
        finish_attempt(student(synced_placement, f"s{number}"), synced_placement, correct=number)
    assert deliver_all() == ["synced"] * 5
    assert fake_lms.token_requests == 1
    assert len(fake_lms.scores) == 5


def test_a_401_refreshes_the_token_once(synced_placement, fake_lms):
    finish_attempt(student(synced_placement, "a"), synced_placement, correct=1)
    finish_attempt(student(synced_placement, "b"), synced_placement, correct=2)
    first, second = GradeSync.objects.order_by("pk")
    assert services.deliver(first.pk) == "synced"
    fake_lms.revoke_tokens()
    assert services.deliver(second.pk) == "synced"
    assert fake_lms.token_requests == 2


@pytest.mark.parametrize("mode", ["500", "429", "hang", "drop"])
def test_transient_failures_retry_later_without_losing_the_grade(
    synced_placement, fake_lms, mode, settings
):
    settings.LTI_HTTP_READ_TIMEOUT = 0.5
    fake_lms.scripted = [mode]
    finish_attempt(student(synced_placement, "s1"), synced_placement, correct=3)
    sync = GradeSync.objects.get()
    assert services.deliver(sync.pk) == "retry"
    sync.refresh_from_db()
    assert sync.state == SyncState.PENDING
    assert sync.tries == 1
    assert sync.last_error
    assert sync.lease_until is None
    assert sync.next_attempt_at > sync.created_at
    if mode == "429":  # the platform's Retry-After: 1 second
        delay = (sync.next_attempt_at - sync.created_at).total_seconds()
        assert 0.9 < delay < 5
    assert services.deliver(sync.pk) == "skipped"  # not due yet
    GradeSync.objects.filter(pk=sync.pk).update(next_attempt_at=sync.created_at)
    assert services.deliver(sync.pk) == "synced"
    (score,) = fake_lms.scores.values()
    assert score["scoreGiven"] == 3.0


def test_a_refusal_is_recorded_with_the_platforms_reason_and_shown(synced_placement, fake_lms):
    user = student(synced_placement, "s1")
    finish_attempt(user, synced_placement, correct=4)
    synced_placement.lineitem_url = fake_lms.url("/lineitems/999")
    synced_placement.save()
    assert deliver_all() == ["failed"]
    sync = GradeSync.objects.get()
    assert sync.state == SyncState.FAILED
    assert sync.last_status == 404
    assert "not found" in sync.last_error

    teacher = student(synced_placement, "teacher")
    teacher.lti_memberships.update(role="staff")
    client = launched_client(teacher.lti_memberships.get())
    page = client.get(reverse("gradebook:grades", args=[synced_placement.pk])).content.decode()
    assert "Failed" in page
    assert "not found" in page

    # The instructor fixes nothing on our side but can retry after the LMS is fixed.
    synced_placement.lineitem_url = fake_lms.url("/lineitems/1")
    synced_placement.save()
    response = client.post(reverse("gradesync:retry", args=[sync.pk]))
    assert response.status_code == 302
    sync.refresh_from_db()
    assert sync.state == SyncState.PENDING
    assert services.deliver(sync.pk) == "synced"


def test_a_newer_score_held_by_moodle_is_not_a_failure(synced_placement, fake_lms):
    finish_attempt(student(synced_placement, "s1"), synced_placement, correct=2)
    sync = GradeSync.objects.get()
    (lineitem,) = fake_lms.lineitems
    fake_lms.scores[(lineitem, "s1")] = {"timestamp": "2999-01-01T00:00:00.000Z"}
    assert services.deliver(sync.pk) == "synced"
    sync.refresh_from_db()
    assert sync.last_status == 409
    assert "newer score" in sync.outcome


def test_changes_of_one_student_are_delivered_in_order(fake_lms, quiz):
    synced_placement = graded_placement(fake_lms, quiz)
    synced_placement.placement.grading_method = "last"
    synced_placement.placement.save()
    user = student(synced_placement, "s1")
    finish_attempt(user, synced_placement, correct=2)
    finish_attempt(user, synced_placement, correct=7)
    older, newer = GradeSync.objects.order_by("pk")
    assert services.deliver(newer.pk) == "skipped"  # waits for the older change
    assert services.deliver(older.pk) == "synced"
    assert services.deliver(newer.pk) == "synced"
    assert [entry[3] for entry in fake_lms.accepted] == [2.0, 7.0]


def test_an_unchanged_grade_is_not_sent_again(synced_placement):
    user = student(synced_placement, "s1")
    finish_attempt(user, synced_placement, correct=6)
    finish_attempt(user, synced_placement, correct=3)  # highest stays 6
    assert GradeSync.objects.count() == 1


def test_the_line_item_is_found_or_created_when_the_launch_named_none(fake_lms, quiz):
    synced_placement = graded_placement(fake_lms, quiz, lineitem=False)
    finish_attempt(student(synced_placement, "s1"), synced_placement, correct=8)
    assert deliver_all() == ["synced"]
    synced_placement.refresh_from_db()
    (item,) = fake_lms.lineitems.values()
    assert synced_placement.lineitem_url == item["id"]
    assert item["resourceLinkId"] == "rl-1"
    assert item["scoreMaximum"] == 8


def test_a_context_without_ags_says_grades_cannot_be_synced(fake_lms, quiz):
    synced_placement = graded_placement(fake_lms, quiz, lineitem=False, scopes=[c.SCOPE_NRPS])
    synced_placement.ags_lineitems_url = ""
    synced_placement.save()
    user = student(synced_placement, "s1")
    finish_attempt(user, synced_placement, correct=8)
    assert not GradeSync.objects.exists()
    teacher = student(synced_placement, "t")
    teacher.lti_memberships.update(role="staff")
    page = launched_client(teacher.lti_memberships.get()).get(
        reverse("gradebook:grades", args=[synced_placement.pk])
    )
    assert "did not offer grade services" in page.content.decode()


def test_a_killed_delivery_becomes_due_again_after_its_lease(synced_placement):
    finish_attempt(student(synced_placement, "s1"), synced_placement, correct=1)
    sync = GradeSync.objects.get()
    claimed = services._claim(sync.pk)  # a worker took it and then died
    assert claimed is not None
    assert services.requeue_due() == 0
    assert services.deliver(sync.pk) == "skipped"
    GradeSync.objects.filter(pk=sync.pk).update(lease_until=sync.created_at)
    assert services.deliver(sync.pk) == "synced"


def test_roster_paging_follows_a_mixed_case_next_url(synced_placement, fake_lms):
    from lti.models import Membership
    from lti.services import sync_roster

    fake_lms.members = [
        {"user_id": f"m{n}", "roles": ["Learner"], "status": "Active", "name": f"Member {n}"}
        for n in range(5)
    ] + [
        {"user_id": "prof", "roles": ["Instructor"], "status": "Active", "name": "Prof"},
        {"user_id": "gone", "roles": ["Learner"], "status": "Inactive"},
    ]
    assert sync_roster(synced_placement.context) == 7
    members = {m.user.lti_user.sub: m for m in Membership.objects.select_related("user__lti_user")}
    assert set(members) == {"m0", "m1", "m2", "m3", "m4", "prof", "gone"}
    assert members["prof"].role == "staff"
    assert not members["gone"].is_active
    # Four members are on the first page, three on the second (reached only by its exact URL).
    assert members["m3"].user.lti_user.name == "Member 3"
    assert "m4" in members


def test_only_staff_may_refresh_the_roster_or_retry(synced_placement):
    learner = student(synced_placement, "s1")
    finish_attempt(learner, synced_placement, correct=1)
    client = launched_client(learner.lti_memberships.get())
    assert client.post(reverse("lti:roster-refresh", args=[synced_placement.pk])).status_code == 403
    sync = GradeSync.objects.get()
    assert client.post(reverse("gradesync:retry", args=[sync.pk])).status_code == 403


def test_a_teacher_demoted_after_the_launch_may_no_longer_retry(synced_placement):
    """The launch said staff; the roster since says learner (decision 10)."""
    finish_attempt(student(synced_placement, "s1"), synced_placement, correct=1)
    teacher = student(synced_placement, "teacher")
    teacher.lti_memberships.update(role="staff")
    client = launched_client(teacher.lti_memberships.get())
    teacher.lti_memberships.update(role="learner")
    sync = GradeSync.objects.get()
    assert client.post(reverse("gradesync:retry", args=[sync.pk])).status_code == 403


@pytest.mark.parametrize("retry_after", ["soon", "²", "99999999999999"])
def test_odd_retry_after_values_still_retry_within_the_maximum(
    synced_placement, fake_lms, retry_after, settings
):
    settings.GRADESYNC_BACKOFF_MAX_SECONDS = 60
    fake_lms.scripted = ["429"]
    fake_lms.retry_after = retry_after
    finish_attempt(student(synced_placement, "s1"), synced_placement, correct=3)
    sync = GradeSync.objects.get()
    assert services.deliver(sync.pk) == "retry"
    sync.refresh_from_db()
    assert (sync.next_attempt_at - sync.created_at).total_seconds() < 61 + 5
    assert sync.tries == 1


def test_a_failed_delivery_lets_the_next_change_go(fake_lms, quiz):
    synced_placement = graded_placement(fake_lms, quiz)
    synced_placement.placement.grading_method = "last"
    synced_placement.placement.save()
    user = student(synced_placement, "s1")
    finish_attempt(user, synced_placement, correct=2)
    finish_attempt(user, synced_placement, correct=7)
    older, newer = GradeSync.objects.order_by("pk")
    GradeSync.objects.filter(pk=older.pk).update(state=SyncState.FAILED)
    assert services.deliver(newer.pk) == "synced"
    # Retrying the older, superseded change is refused; so is retrying a delivered one.
    assert services.retry_now(older) is False
    assert services.retry_now(newer) is False


def test_roster_sync_deactivates_members_who_left(synced_placement, fake_lms):
    from lti.models import Membership
    from lti.services import sync_roster

    fake_lms.members = [
        {"user_id": "a", "roles": ["Learner"], "status": "Active"},
        {"user_id": "b", "roles": ["Instructor"], "status": "Active"},
    ]
    sync_roster(synced_placement.context)
    fake_lms.members = fake_lms.members[:1]
    sync_roster(synced_placement.context)
    active = dict(Membership.objects.values_list("user__lti_user__sub", "is_active"))
    assert active == {"a": True, "b": False}
