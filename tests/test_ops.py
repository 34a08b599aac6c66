"""Operations: the request id in the log lines of a request and of the task it enqueued
(a real worker on a real Redis), and the Prometheus metrics."""

from __future__ import annotations

import json
import logging

import pytest

from labs.models import LabRun, RunStatus
from labs.tasks import execute_lab_run
from lti.models import Role
from lti.services import enrol_demo_member
from ops.logs import JsonFormatter, RequestIdFilter

from .labs_helpers import lab_placement, small_lab
from .quiz_helpers import launched_client
from .test_labs_worker import kill_session, start_gpu_worker
from .workers import PrivateRedis, send_through, wait_until


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict] = []
        self.addFilter(RequestIdFilter())
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.mark.django_db(transaction=True)
def test_the_request_id_follows_a_request_into_its_task(quiz, tmp_path, monkeypatch, settings):
    redis = PrivateRedis(tmp_path)
    send_through(execute_lab_run, redis.url, monkeypatch)
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    client = launched_client(learner)
    collected = Collect()
    logging.getLogger().addHandler(collected)
    log = tmp_path / "worker.log"
    worker = start_gpu_worker(
        {"REDIS_URL": redis.url, "CELERY_BROKER_URL": redis.url, "LAB_TIMING_REPEATS": "1",
         "LOG_FORMAT": "json"},
        log,
    )  # fmt: skip
    try:
        response = client.post(
            f"/lab/{placement.pk}/runs/", {"kind": "sqrt"}, HTTP_X_REQUEST_ID="req-0123456789abcdef"
        )
        assert response.status_code == 302
        assert response["X-Request-ID"] == "req-0123456789abcdef"
        assert wait_until(lambda: LabRun.objects.get().status == RunStatus.SUCCEEDED, timeout=90), (
            log.read_text()[-3000:]
        )
    finally:
        logging.getLogger().removeHandler(collected)
        kill_session(worker)
        redis.stop()
    web = [line for line in collected.lines if line["request_id"] == "req-0123456789abcdef"]
    assert any("queued" in line["message"] for line in web), collected.lines
    task_lines = []
    for raw in log.read_text().splitlines():
        try:
            task_lines.append(json.loads(raw))
        except ValueError:
            continue  # Celery's banner is not a log record
    mine = [line for line in task_lines if line.get("request_id") == "req-0123456789abcdef"]
    assert any(line.get("task_name") == "labs.tasks.execute_lab_run" for line in mine), task_lines
    assert any("claimed" in line["message"] for line in mine)
    # A request without an id gets a fresh one.
    assert len(client.get("/healthz")["X-Request-ID"]) == 32
    # An id that does not look like one is replaced, not echoed.
    assert client.get("/healthz", HTTP_X_REQUEST_ID="<script>")["X-Request-ID"] != "<script>"


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one series in a Prometheus exposition."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        metric, _, label_text = series.partition("{")
        got = ",".join(sorted(label_text.rstrip("}").split(","))) if label_text else ""
        if metric == name and got == wanted:
            return float(value)
    raise AssertionError(f"{name}{{{wanted}}} not in the exposition")


@pytest.mark.django_db
def test_metrics_count_requests_tasks_and_backlogs(client, quiz, settings):
    from labs.tasks import requeue_stuck_lab_runs

    settings.METRICS_TOKEN = "metrics-secret"
    client.defaults["HTTP_AUTHORIZATION"] = "Bearer metrics-secret"
    before = client.get("/metrics").content.decode()
    healthz_before = (
        sample(before, "gcquiz_http_requests_total", method="GET", view="healthz", status="200")
        if 'view="healthz"' in before
        else 0
    )
    for _ in range(3):
        client.get("/healthz")
    requeue_stuck_lab_runs.apply()  # runs here, with Celery's signals
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    LabRun.objects.create(
        placement=placement,
        user=learner.user,
        number=1,
        policy={"kind": "sqrt"},
        submitted_at=placement.created_at,
        next_attempt_at=placement.created_at,
    )
    text = client.get("/metrics").content.decode()
    assert (
        sample(text, "gcquiz_http_requests_total", method="GET", view="healthz", status="200")
        == healthz_before + 3
    )
    assert (
        sample(text, "gcquiz_http_request_duration_seconds_count", method="GET", view="healthz")
        >= 3
    )
    assert (
        sample(
            text,
            "gcquiz_celery_tasks_total",
            task="labs.tasks.requeue_stuck_lab_runs",
            state="SUCCESS",
        )
        >= 1
    )
    assert sample(text, "gcquiz_lab_queue_depth", status="queued") == 1
    assert sample(text, "gcquiz_gradesync_backlog", state="pending") == 0

    # An odd HTTP method does not make a new series.
    client.generic("XMETHOD", "/healthz")
    assert 'method="XMETHOD"' not in client.get("/metrics").content.decode()

    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    del client.defaults["HTTP_AUTHORIZATION"]
    assert client.get("/metrics").status_code == 403
    settings.METRICS_TOKEN = ""  # no token: nothing outside debug mode, whoever asks
    assert client.get("/metrics").status_code == 403


def test_every_task_has_soft_and_hard_time_limits():
    from config.celery import app

    app.loader.import_default_modules()
    ours = [t for name, t in app.tasks.items() if name.split(".")[0] in
            {"assessments", "lti", "gradesync", "labs", "analytics", "ops", "api"}]  # fmt: skip
    assert len(ours) >= 6
    for task in ours:
        soft = task.soft_time_limit or app.conf.task_soft_time_limit
        hard = task.time_limit or app.conf.task_time_limit
        assert soft and hard and soft < hard, task.name
