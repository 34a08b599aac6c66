"""A lab submission while the broker is down: the run is stored, the student sees it queued
(no 500), and it runs once the broker is back, on the beat's next requeue (a real Celery
worker and beat on a redis-server of the test's own, stopped and started again)."""

from __future__ import annotations

import pytest
from celery import current_app

from activities.demo import enrol_demo_member
from labs import services
from labs.models import LabRun, RunStatus
from labs.tasks import execute_lab_run
from lti.models import Role
from tests.labs_helpers import lab_placement, small_lab
from tests.quiz_helpers import launched_client
from tests.workers import (
    PrivateRedis,
    refuse_the_send_of,
    send_through,
    start_beat,
    start_worker,
    stop,
    wait_until,
)


@pytest.mark.worker
@pytest.mark.torch
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("quiz")
def test_a_run_submitted_while_the_broker_is_down_is_queued_and_runs_when_it_returns(
    tmp_path, monkeypatch
):
    redis = PrivateRedis(tmp_path)
    env = {
        "REDIS_URL": redis.url,
        "CELERY_BROKER_URL": redis.url,
        "LAB_TIMING_REPEATS": "1",
        "LAB_DEVICE": "cpu",
        "LAB_SCHEDULE_SECONDS": "1",
    }
    send_through(execute_lab_run, redis.url, monkeypatch)
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    client = launched_client(learner)
    log = tmp_path / "celery.log"

    redis.stop()
    response = client.post(f"/lab/{placement.pk}/runs/", {"kind": "sqrt"})
    assert response.status_code == 302, response.content[:500]
    page = client.get(response["Location"])
    assert page.status_code == 200
    status = page.content.decode()
    assert "Waiting in the queue: number 1 in the queue" in status
    run = LabRun.objects.get()
    assert run.status == RunStatus.QUEUED
    assert run.enqueued_at is None  # not sent: due for the beat's next requeue

    redis.start()
    processes = [
        start_worker("gpu", env, log=log),
        start_worker("celery", env, log=log),
        start_beat(tmp_path / "beat-schedule", env, log=log),
    ]
    try:
        assert wait_until(
            lambda: LabRun.objects.get(pk=run.pk).status == RunStatus.SUCCEEDED,
            timeout=180,
            interval=0.5,
        ), log.read_text()[-3000:]
    finally:
        for process in processes:
            stop(process)
        redis.stop()
    done = LabRun.objects.get(pk=run.pk)
    assert done.execution_attempts == 1
    assert done.result["grads_match"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("quiz")
def test_one_run_the_broker_refuses_does_not_keep_the_others_from_the_requeue(
    tmp_path, monkeypatch
):
    """The requeue sends every stuck run: one refused send is logged, the loop goes on, and
    the refused run is due again at the next beat."""
    redis = PrivateRedis(tmp_path)
    send_through(execute_lab_run, redis.url, monkeypatch)
    lab = small_lab()
    runs = []
    for number in range(3):
        learner = enrol_demo_member(Role.LEARNER)
        placement = lab_placement(learner.context, lab, f"lab-{number}")
        runs.append(
            services.submit_run(placement=placement, user=learner.user, policy={"kind": "sqrt"})
        )
    LabRun.objects.update(enqueued_at=None)  # their reminders were lost
    refused = runs[0].pk
    refuse_the_send_of(refused, monkeypatch)
    try:
        assert services.requeue_stuck_runs() == 2
        with current_app.connection_for_write(redis.url) as connection:
            waiting = connection.default_channel.client.llen("gpu")
    finally:
        redis.stop()
    assert waiting == 2 + 3  # the two requeued, after the three sent at submission
    sent = dict(LabRun.objects.values_list("pk", "enqueued_at"))
    assert sent[refused] is None
    assert all(sent[run.pk] is not None for run in runs[1:])
