"""500 students finish attempts while the LMS fails a share of calls, the worker is killed
and Redis restarts: afterwards every grade change is in the LMS exactly once, in order."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from activities.models import Grade
from gradesync.models import GradeSync, SyncState
from gradesync.tasks import deliver_grade
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.workers import (
    PrivateRedis,
    Supervised,
    send_through,
    start_beat,
    start_worker,
    wait_until,
)

STUDENTS = 500
SECOND_ATTEMPTS = 100


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_every_grade_change_reaches_the_lms_exactly_once_through_failures(
    fake_lms, quiz, tmp_path, monkeypatch
):
    redis = PrivateRedis(tmp_path)
    env = {
        "REDIS_URL": redis.url,
        "CELERY_BROKER_URL": redis.url,
        "LTI_HTTP_READ_TIMEOUT": "0.5",
        "GRADESYNC_BACKOFF_BASE_SECONDS": "0.2",
        "GRADESYNC_BACKOFF_MAX_SECONDS": "2",
        "GRADESYNC_LEASE_SECONDS": "3",
        "GRADESYNC_REQUEUE_SECONDS": "1",
    }
    log = tmp_path / "celery.log"
    fake_lms.failure_rates = {"500": 0.10, "429": 0.05, "hang": 0.03, "drop": 0.05}
    fake_lms.hang_seconds = 1.0

    reconnect = send_through(deliver_grade, redis.url, monkeypatch)  # this process's too
    placement = graded_placement(fake_lms, quiz)
    placement.placement.grading_method = "last"
    placement.placement.save()

    worker = Supervised(lambda: start_worker("celery", env, pool="threads", concurrency=4, log=log))
    beat = Supervised(lambda: start_beat(tmp_path / "beat-schedule", env, log=log))
    try:
        users = [student(placement, f"s{n:03d}") for n in range(STUDENTS)]
        for number, user in enumerate(users):
            finish_attempt(user, placement, correct=number % 9)  # never fails on the broker
            if number == 200:
                worker.kill()  # killed mid-run, holding deliveries
            worker.check()
            beat.check()
            if number == 350:
                redis.restart()
                reconnect()
        for number, user in enumerate(users[:SECOND_ATTEMPTS]):
            finish_attempt(user, placement, correct=8 - number % 9)

        def settled() -> bool:
            worker.check()
            beat.check()
            return not GradeSync.objects.filter(state=SyncState.PENDING).exists()

        assert wait_until(settled, timeout=240, interval=1), (
            GradeSync.objects.filter(state=SyncState.PENDING).count(),
            log.read_text()[-3000:],
        )
    finally:
        worker.stop()
        beat.stop()
        redis.stop()

    assert not GradeSync.objects.filter(state=SyncState.FAILED).exists()
    changes = GradeSync.objects.count()
    assert changes >= STUDENTS  # one per change; a second attempt may not change the grade
    # The LMS saw failures of every kind, and the sync got through all of them.
    assert {"500", "429", "hang", "drop", "ok"} <= set(fake_lms.counts)

    accepted_by_user: dict[str, list[tuple[str, float]]] = {}
    for _lineitem, user_id, timestamp, score in fake_lms.accepted:
        accepted_by_user.setdefault(user_id, []).append((timestamp, score))
    assert len(accepted_by_user) == STUDENTS
    for grade in Grade.objects.select_related("user__lti_user"):
        sub = grade.user.lti_user.sub
        received = accepted_by_user[sub]
        expected = [
            (sync.changed_at, float(sync.score_given))
            for sync in GradeSync.objects.filter(user=grade.user).order_by("created_at")
        ]
        # Each change exactly once, in the order the grade changed.
        assert [score for _ts, score in received] == [score for _ts, score in expected], sub
        assert [ts for ts, _score in received] == sorted(ts for ts, _score in received), sub
        held = fake_lms.scores[(fake_lms.lineitem_id(placement.lineitem_url), sub)]
        assert held["scoreGiven"] == float(grade.score_given)
    assert get_user_model().objects.count() == STUDENTS
