"""The periodic maintenance task runs in a real Celery worker over the real Redis."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone

from assessments.tasks import clear_expired_sessions
from tests.workers import celery_worker, wait_until


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_beat_task_clears_expired_sessions_in_a_real_worker():
    now = timezone.now()
    Session.objects.create(session_key="expired", session_data="", expire_date=now - timedelta(1))
    Session.objects.create(session_key="current", session_data="", expire_date=now + timedelta(1))
    with celery_worker() as queue:
        clear_expired_sessions.apply_async(queue=queue)
        assert wait_until(lambda: not Session.objects.filter(session_key="expired").exists())
    assert Session.objects.filter(session_key="current").exists()
