"""Grade sync's beat requeue through the one leased-job helper: one delivery the broker
refuses does not keep the others from being sent (a real redis-server of the test's own)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery import current_app

from gradesync import services
from gradesync.models import GradeSync
from gradesync.tasks import deliver_grade
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.workers import PrivateRedis, refuse_the_send_of, send_through


@pytest.mark.worker
@pytest.mark.django_db
def test_one_delivery_the_broker_refuses_does_not_keep_the_others_from_the_requeue(
    fake_lms, quiz, tmp_path, monkeypatch, settings
):
    placement = graded_placement(fake_lms, quiz)
    for number in range(3):
        finish_attempt(student(placement, f"s{number}"), placement, correct=number + 1)
    # Due long enough ago that the requeue takes them (their reminders were lost).
    GradeSync.objects.update(
        next_attempt_at=GradeSync.objects.first().created_at
        - timedelta(seconds=settings.GRADESYNC_REQUEUE_SECONDS + 1)
    )
    refused = GradeSync.objects.order_by("pk").first().pk
    redis = PrivateRedis(tmp_path)
    send_through(deliver_grade, redis.url, monkeypatch)
    refuse_the_send_of(refused, monkeypatch)
    try:
        assert services.requeue_due() == 2
        with current_app.connection_for_write(redis.url) as connection:
            waiting = connection.default_channel.client.llen("celery")
    finally:
        redis.stop()
    assert waiting == 2
