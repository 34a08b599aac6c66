"""ops.rows: rows read and written by written-out statements must be the rows the ORM reads
and writes, whatever the columns' conversions (decisions 58, 76 and 78)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from activities.models import Grade
from gradesync.models import GradeSync, SyncState
from lti.models import ResourceLink
from lti.selectors import link_with_course
from ops import rows

pytestmark = pytest.mark.django_db


def _written(sync: GradeSync) -> dict:
    """What a sync's row holds, read back by the ORM, but for what differs by nature."""
    return model_to_dict(
        GradeSync.objects.get(pk=sync.pk), exclude=["id", "created_at", "next_attempt_at"]
    )


def test_an_inserted_row_is_the_row_the_orms_create_writes(placement, learner):
    user = learner
    grade = Grade.objects.create(
        user=user,
        placement=placement,
        score_given=Decimal("6.5"),
        score_maximum=Decimal(8),
        attempt_count=1,
        updated_at=timezone.now(),
    )
    values = {
        "grade": grade,
        "user_id": user.pk,
        "placement": placement,
        # More places than the column keeps: both round it the same way.
        "score_given": Decimal("6.4996"),
        "score_maximum": Decimal(8),
        "changed_at": timezone.now() - timedelta(minutes=3),
        "comment": "Ответ <b>засчитан</b>",
        "next_attempt_at": timezone.now(),
    }
    before = timezone.now()
    by_orm = GradeSync.objects.create(**values)
    by_statement = rows.insert_row(GradeSync(**values))

    assert by_statement.pk is not None
    assert by_statement.pk != by_orm.pk
    assert not by_statement._state.adding
    assert _written(by_statement) == _written(by_orm)
    stored = GradeSync.objects.get(pk=by_statement.pk)
    # The defaults and auto_now_add, as the ORM fills them.
    assert stored.state == SyncState.PENDING
    assert stored.tries == 0
    assert stored.lease_until is None
    assert stored.last_error == ""
    assert before <= stored.created_at <= timezone.now()
    assert stored.score_given == Decimal("6.500")


def test_an_inserted_row_keeps_a_primary_key_given(placement, learner):
    user = learner
    grade = Grade.objects.create(
        user=user,
        placement=placement,
        score_given=Decimal(1),
        score_maximum=Decimal(8),
        attempt_count=1,
        updated_at=timezone.now(),
    )
    now = timezone.now()
    chosen = 10_000 + GradeSync.objects.count()
    sync = rows.insert_row(
        GradeSync(
            pk=chosen,
            grade=grade,
            user=user,
            placement=placement,
            score_given=1,
            score_maximum=8,
            changed_at=now,
            next_attempt_at=now,
        )
    )
    assert sync.pk == chosen
    assert GradeSync.objects.filter(pk=chosen).exists()


def test_an_inserted_row_converts_json_as_the_orm_does(placement):
    values = {
        "context": placement.context,
        "resource_link_id": "rl-json",
        "ags_scopes": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"],
    }
    by_statement = rows.insert_row(ResourceLink(**values))
    values["resource_link_id"] = "rl-json-orm"
    by_orm = ResourceLink.objects.create(**values)
    written, expected = (
        model_to_dict(ResourceLink.objects.get(pk=link.pk), exclude=["id", "resource_link_id"])
        for link in (by_statement, by_orm)
    )
    assert written == expected


def test_an_expression_is_refused_rather_than_bound(placement, learner):
    from django.db.models.functions import Now

    grade = Grade.objects.create(
        user=learner,
        placement=placement,
        score_given=1,
        score_maximum=8,
        attempt_count=1,
        updated_at=timezone.now(),
    )
    sync = GradeSync(
        grade=grade,
        user=learner,
        placement=placement,
        score_given=1,
        score_maximum=8,
        changed_at=timezone.now(),
        next_attempt_at=Now(),
    )
    with pytest.raises(TypeError, match="next_attempt_at is an expression"):
        rows.insert_row(sync)
    assert not GradeSync.objects.exists()


def test_a_link_with_its_course_is_what_the_orm_reads(placement):
    by_orm = ResourceLink.objects.select_related("context").get(pk=placement.pk)
    with_course = link_with_course(placement.pk)
    # The course read with the link: no statement more.
    with CaptureQueriesContext(connection) as statements:
        course = with_course.context
    assert not statements.captured_queries
    assert model_to_dict(with_course) == model_to_dict(by_orm)
    assert model_to_dict(course) == model_to_dict(by_orm.context)
    # Not editable, so not in model_to_dict: the dates, converted as the ORM converts them.
    assert with_course.created_at == by_orm.created_at
    assert course.created_at == by_orm.context.created_at
    with pytest.raises(ResourceLink.DoesNotExist):
        link_with_course(placement.pk + 10_000)
