"""Pages reached from an activity's manage page send the instructor back to that activity's
own page: a lab's, not the quiz's (which answered 404 for a lab)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from activities.services import set_placement_grade
from gradesync import services
from gradesync.models import GradeSync, SyncState
from lti.models import Role
from tests.grades_helpers import graded_placement, student
from tests.labs_helpers import small_lab
from tests.quiz_helpers import launched_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced_lab_placement(fake_lms):
    return graded_placement(fake_lms, small_lab())


def instructor_of(placement):
    teacher = student(placement, "teacher")
    membership = teacher.lti_memberships.get()
    membership.role = Role.STAFF
    membership.save()
    return launched_client(membership)


def test_retry_now_on_a_labs_failed_sync_returns_to_the_labs_page(synced_lab_placement, fake_lms):
    learner = student(synced_lab_placement, "s1")
    set_placement_grade(
        user=learner,
        placement_id=synced_lab_placement.pk,
        fraction=Decimal("0.5"),
        score_maximum=Decimal(100),
        grading_method="highest",
        counted=1,
    )
    synced_lab_placement.lineitem_url = fake_lms.url("/lineitems/999")  # the LMS refuses it
    synced_lab_placement.save()
    sync = GradeSync.objects.get()
    assert services.deliver(sync.pk) == "failed"

    client = instructor_of(synced_lab_placement)
    response = client.post(reverse("gradesync:retry", args=[sync.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("labs:manage", args=[synced_lab_placement.pk])
    assert client.get(response["Location"]).status_code == 200
    sync.refresh_from_db()
    assert sync.state == SyncState.PENDING


def test_a_roster_refresh_from_a_lab_returns_to_the_labs_page(synced_lab_placement):
    client = instructor_of(synced_lab_placement)
    response = client.post(reverse("lti:roster-refresh", args=[synced_lab_placement.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("labs:manage", args=[synced_lab_placement.pk])
    assert client.get(response["Location"]).status_code == 200
