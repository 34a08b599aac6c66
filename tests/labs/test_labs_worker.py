"""A lab run crosses the broker: a real Celery worker on the `gpu` queue (as production
starts it: -Q gpu, concurrency 1) on a real Redis, killed in the middle of a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest
from django.conf import settings

from activities.models import Grade
from gradesync.models import GradeSync
from labs import services
from labs.models import LabRun, RunStatus
from labs.tasks import execute_lab_run
from tests.grades_helpers import graded_placement, student
from tests.labs_helpers import small_lab
from tests.workers import PrivateRedis, _env, send_through, stop, wait_until


def start_gpu_worker(env: dict[str, str], log) -> subprocess.Popen:
    """In a session of its own, so killing it kills the runner child too, as losing the
    machine would."""
    command = [
        sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "gpu",
        "--concurrency=1", "--pool=prefork", "--loglevel=INFO", "--without-heartbeat",
        "--without-mingle", "--without-gossip", "-n", f"gpu-{uuid.uuid4().hex[:6]}@%h",
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        cwd=settings.BASE_DIR,
        env=_env(env),
        stdout=open(log, "ab"),  # noqa: SIM115 (closed with the process)
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_session(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)  # no warm shutdown, no acks, no cleanup
    process.wait()


@pytest.mark.worker
@pytest.mark.torch
@pytest.mark.django_db(transaction=True)
def test_a_run_survives_its_worker_being_killed_and_reaches_the_gradebook(
    fake_lms, tmp_path, monkeypatch
):
    redis = PrivateRedis(tmp_path)
    env = {
        "REDIS_URL": redis.url,
        "CELERY_BROKER_URL": redis.url,
        "LAB_TIMING_REPEATS": "30",  # long enough to be killed in the middle
        "LAB_LEASE_SECONDS": "3",
        "LAB_DEVICE": "cpu",
    }
    send_through(execute_lab_run, redis.url, monkeypatch)
    monkeypatch.setattr(settings, "LAB_LEASE_SECONDS", 3)
    lab = small_lab(blocks=16, width=64, batch=64)
    placement = graded_placement(fake_lms, lab)
    user = student(placement, "s1")
    log = tmp_path / "worker.log"

    first = start_gpu_worker(env, log)
    try:
        run = services.submit_run(placement=placement, user=user, policy={"kind": "sqrt"})
        assert wait_until(
            lambda: LabRun.objects.get(pk=run.pk).status == RunStatus.RUNNING, timeout=60
        ), log.read_text()[-3000:]
        kill_session(first)
        assert LabRun.objects.get(pk=run.pk).status == RunStatus.RUNNING  # orphaned

        # The second try only has to finish: a short one keeps the test within its time on
        # a machine busy with the rest of the suite (30 repeats took minutes there once).
        second = start_gpu_worker({**env, "LAB_TIMING_REPEATS": "3"}, log)
        try:
            # Beat's job, run here once the dead worker's lease has run out.
            assert wait_until(lambda: services.requeue_stuck_runs() == 1, timeout=30)
            assert wait_until(
                lambda: LabRun.objects.get(pk=run.pk).status == RunStatus.SUCCEEDED,
                timeout=180,
                interval=0.5,
            ), log.read_text()[-3000:]
        finally:
            stop(second)
    finally:
        if first.poll() is None:
            kill_session(first)
        redis.stop()

    done = LabRun.objects.get(pk=run.pk)
    assert done.execution_attempts == 2  # the killed try and the one that finished
    assert done.device == "cpu"
    assert done.result["grads_match"]
    grade = Grade.objects.get(user=user, placement=placement)
    assert grade.score_given == (done.score * 100).quantize(grade.score_given)
    assert GradeSync.objects.filter(grade=grade, score_given=grade.score_given).count() == 1
