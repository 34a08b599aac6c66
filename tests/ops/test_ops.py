"""Operations: the request id in the log lines of a request and of the task it enqueued
(a real worker on a real Redis), and the Prometheus metrics."""

from __future__ import annotations

import gc
import http.client
import json
import logging
import os
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from activities.demo import enrol_demo_member
from labs.models import LabRun, RunStatus
from labs.tasks import execute_lab_run
from lti.models import Role
from ops import healthcheck
from ops.logs import JsonFormatter, RequestIdFilter
from tests import workers
from tests.labs.test_labs_worker import kill_session, start_gpu_worker
from tests.labs_helpers import lab_placement, small_lab
from tests.quiz_helpers import launched_client
from tests.workers import (
    PrivateRedis,
    free_port,
    send_through,
    stop,
    wait_until,
)


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict] = []
        self.addFilter(RequestIdFilter())
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.mark.worker
@pytest.mark.torch
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("quiz", "settings")
def test_the_request_id_follows_a_request_into_its_task(tmp_path, monkeypatch):
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
    assert any(line.get("task_name") == "labs.execute_run" for line in mine), task_lines
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
@pytest.mark.usefixtures("quiz")
def test_metrics_count_requests_tasks_and_backlogs(client, settings):
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
            task="labs.requeue_stuck_runs",
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
        assert soft, task.name
        assert hard, task.name
        assert soft < hard, task.name


def collect_logs() -> Collect:
    collected = Collect()
    logging.getLogger().addHandler(collected)
    return collected


@pytest.mark.django_db
def test_one_log_line_per_request_with_its_id_and_4xx_warnings_keep_it(client, settings):
    collected = collect_logs()
    try:
        ok = client.get("/healthz", HTTP_X_REQUEST_ID="req-ok-0123456789")
        missing = client.get("/no-such-page/", HTTP_X_REQUEST_ID="req-404-0123456789")
        settings.METRICS_TOKEN = "metrics-secret"
        refused = client.get("/metrics", HTTP_X_REQUEST_ID="req-403-0123456789")
    finally:
        logging.getLogger().removeHandler(collected)
    assert (ok.status_code, missing.status_code, refused.status_code) == (200, 404, 403)
    requests = [line for line in collected.lines if line["logger"] == "ops.requests"]
    by_id = {line["request_id"]: line for line in requests}
    assert set(by_id) == {"req-ok-0123456789", "req-404-0123456789", "req-403-0123456789"}
    line = by_id["req-ok-0123456789"]
    assert (line["method"], line["path"], line["view"], line["status"]) == (
        "GET", "/healthz", "healthz", 200,
    )  # fmt: skip
    assert isinstance(line["duration_ms"], float)
    assert line["duration_ms"] >= 0
    assert line["message"] == "GET /healthz 200"
    line = by_id["req-404-0123456789"]
    assert (line["view"], line["status"]) == ("unmatched", 404)
    # Django's own warnings about 4xx responses carry the request's id too, and come once.
    warnings = [line for line in collected.lines if line["logger"] == "django.request"]
    assert {(w["message"], w["request_id"]) for w in warnings} == {
        ("Not Found: /no-such-page/", "req-404-0123456789"),
        ("Forbidden: /metrics", "req-403-0123456789"),
    }
    assert len(warnings) == 2


# One "container": its first process is pid 1, as in every container, so two of them collide
# on the pid; the host name tells them apart. It counts `shared` and its own view N times.
CONTAINER = """
import os, sys
os.getpid = lambda: 1
from ops.metrics import REQUESTS
shared = REQUESTS.labels("GET", "shared", "200")
own = REQUESTS.labels("GET", os.environ["HOSTNAME"], "200")
print("ready", flush=True)
while sys.stdin.readline().strip() == "go":
    for _ in range(int(sys.argv[1])):
        shared.inc()
        own.inc()
    print("done", flush=True)
"""


class Container:
    def __init__(self, hostname: str, folder, count: int) -> None:
        env = {**os.environ, "HOSTNAME": hostname, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", CONTAINER, str(count)],
            cwd=django_settings.BASE_DIR, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stdout.readline().strip() == "ready"

    def count(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "done"

    def exit(self) -> None:
        self.process.stdin.write("exit\n")
        self.process.stdin.flush()
        assert self.process.wait(timeout=20) == 0


@pytest.mark.worker
@pytest.mark.django_db
def test_metrics_add_up_across_containers_whose_pids_collide(client, settings, tmp_path,
                                                             monkeypatch):  # fmt: skip
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    settings.METRICS_TOKEN = "metrics-secret"
    client.defaults["HTTP_AUTHORIZATION"] = "Bearer metrics-secret"

    def total(view: str) -> float:
        text = client.get("/metrics").content.decode()
        return sample(text, "gcquiz_http_requests_total", method="GET", view=view, status="200")

    web = Container("web-1a2b3c", tmp_path, 5)
    worker = Container("worker-4d5e6f", tmp_path, 7)  # both alive, both pid 1
    web.count()
    worker.count()
    assert (total("shared"), total("web-1a2b3c"), total("worker-4d5e6f")) == (12, 5, 7)

    # web's container goes away; its counts stay, its files are folded into the archive,
    # and the running worker's files are left alone.
    web.exit()
    assert (total("shared"), total("web-1a2b3c"), total("worker-4d5e6f")) == (12, 5, 7)
    left = sorted(path.name for path in tmp_path.iterdir() if not path.name.startswith("."))
    assert [name for name in left if "web-1a2b3c" in name] == []
    assert any("worker-4d5e6f" in name for name in left), left
    worker.count()  # it keeps counting into its files
    assert (total("shared"), total("worker-4d5e6f")) == (19, 14)
    assert total("web-1a2b3c") == 5

    # A deploy: the worker is replaced, a new web container starts with the old one's host
    # name and pid; nothing is emptied and the totals carry on.
    worker.exit()
    again = Container("web-1a2b3c", tmp_path, 1)
    again.count()
    assert (total("shared"), total("web-1a2b3c"), total("worker-4d5e6f")) == (20, 6, 14)
    again.exit()
    assert total("shared") == 20
    # What is left: the archive, no file or lock of any process.
    assert sorted(path.name for path in tmp_path.glob("*.db")) == ["counter_archive.db"]
    assert list(tmp_path.glob("*.lock")) == []


def json_lines(text: str) -> list[dict]:
    """Every line of a process's output, each of which must be a JSON object."""
    lines = [line for line in text.splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
    return parsed


def rid(value: str) -> dict[str, str]:
    return {"X-Request-ID": value}


def get(port: int, path: str, source: str = "127.0.0.1", **headers: str):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                            source_address=(source, 0))  # fmt: skip
    try:
        connection.request("GET", path, headers={"Host": "quiz.example.edu", **headers})
        response = connection.getresponse()
        response.read()
        return response
    finally:
        connection.close()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_gunicorn_as_compose_runs_it(tmp_path):
    """config/gunicorn.py with a production host list: probes by address answer, only the
    trusted proxy's X-Forwarded-Proto counts, and every line it writes is JSON."""
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {
        **os.environ,
        "DATABASE_URL": workers.test_database_url(), "DEBUG": "0",
        "ALLOWED_HOSTS": "quiz.example.edu",
        "SECURE_SSL_REDIRECT": "1", "BEHIND_HTTPS_PROXY": "0", "LOG_FORMAT": "json",
        "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "1",
        "FORWARDED_ALLOW_IPS": "127.0.0.1", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "HOME": "/nonexistent",  # the image's user had no home: gunicorn's control socket
    }  # fmt: skip
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi"],
            cwd=django_settings.BASE_DIR, env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        assert wait_until(lambda: b"Booting worker" in log.read_bytes(), timeout=30), (
            log.read_text()
        )

        def answers() -> bool:
            try:
                return get(port, "/healthz", Host=f"127.0.0.1:{port}").status == 200
            except OSError:
                return False

        assert wait_until(answers, timeout=30), log.read_text()
        ready = get(
            port, "/readyz", Host=f"127.0.0.1:{port}", **{"X-Request-ID": "probe-0123456789"}
        )
        assert ready.status == 200
        assert get(port, "/nope", **{"X-Request-ID": "lost-0123456789"}).status == 301
        # HTTPS is believed from the proxy (127.0.0.1 here), not from anyone else (127.0.0.2).
        https = {"X-Forwarded-Proto": "https"}
        assert get(port, "/nope", **https, **{"X-Request-ID": "miss-0123456789"}).status == 404
        assert get(port, "/nope", source="127.0.0.2", **https).status == 301
        # A long request line (an LTI login's hints in its query) reaches the application,
        # where gunicorn's default limit answered a bare 400 of its own.
        long_line = "/nope?lti_message_hint=" + "h" * 6000
        assert get(port, long_line, **https, **{"X-Request-ID": "long-0123456789"}).status == 404
    finally:
        stop(server)
    lines = json_lines(log.read_text())
    assert any(line["logger"] == "gunicorn.error" and "Booting worker" in line["message"]
               for line in lines)  # fmt: skip
    assert not any("Control server" in line["message"] for line in lines)
    requests = {line["request_id"]: line for line in lines if line["logger"] == "ops.requests"}
    assert (requests["probe-0123456789"]["view"], requests["probe-0123456789"]["status"]) == (
        "readyz", 200,
    )  # fmt: skip
    assert requests["miss-0123456789"]["status"] == 404
    not_found = [line["request_id"] for line in lines if line["logger"] == "django.request"]
    assert sorted(not_found) == ["long-0123456789", "miss-0123456789"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_celery_worker_and_beat_as_compose_runs_them_write_only_json_lines(tmp_path):
    """`celery --quiet`: no plain-text banner; the worker and beat announce themselves in log
    lines instead."""
    queue = f"test-{uuid.uuid4().hex[:12]}"
    env = {
        **os.environ, "DATABASE_URL": workers.test_database_url(), "LOG_FORMAT": "json",
        # Celery warns a worker started as root before any logging exists; the image's
        # processes run as an ordinary user, the tests may not.
        "PYTHONWARNINGS": "ignore::UserWarning",
    }  # fmt: skip
    runs = {
        "worker": ["worker", "-Q", queue, "--pool=solo", "--without-heartbeat",
                   "--without-mingle", "--without-gossip", "-n", f"{queue}@%h"],
        "beat": ["beat", "-s", str(tmp_path / "celerybeat-schedule")],
    }  # fmt: skip
    for name, arguments in runs.items():
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "--quiet", *arguments,
                 "--loglevel=INFO"],
                cwd=django_settings.BASE_DIR, env=env, stdout=output, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            assert wait_until(lambda log=log: b"starting" in log.read_bytes(), timeout=60), (
                log.read_text()
            )
            if name == "worker":
                assert wait_until(lambda log=log: b"ready." in log.read_bytes(), timeout=60)
        finally:
            stop(process)
        lines = json_lines(log.read_text())
        [announced] = [line for line in lines if "starting" in line["message"]]
        assert announced["logger"] == "ops.tasks"
        if name == "worker":
            assert queue in announced["message"]
            assert "(solo pool)" in announced["message"]
        else:
            assert "scheduled tasks" in announced["message"]


@pytest.mark.django_db
def test_the_deploy_command_logs_what_migrate_and_the_loaders_print():
    collected = collect_logs()
    try:
        call_command("deploy")
    finally:
        logging.getLogger().removeHandler(collected)
    loggers = [line["logger"] for line in collected.lines]
    assert {"ops.deploy.migrate", "ops.deploy.load_quiz", "ops.deploy.load_labs"} <= set(loggers)
    assert any("No migrations to apply" in line["message"] for line in collected.lines)
    assert collected.lines[-1]["message"] == "deploy: done"


@pytest.mark.parametrize(
    "names",
    [["celerybeat-schedule"], ["celerybeat-schedule.db"], ["celerybeat-schedule.dat", "x.dir"]],
)
def test_beat_health_check_reads_the_schedule_whatever_the_dbm_module(tmp_path, names):
    schedule = str(tmp_path / "celerybeat-schedule")
    assert healthcheck.main(["beat", schedule]) == 1  # never written
    names = [name.replace("x.", "celerybeat-schedule.") for name in names]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    assert healthcheck.main(["beat", schedule]) == 0
    old = time.time() - healthcheck.BEAT_MAX_AGE_SECONDS - 60
    for name in names:
        os.utime(tmp_path / name, (old, old))
    assert healthcheck.main(["beat", schedule]) == 1  # beat stopped writing


def test_a_gunicorn_worker_freezes_what_it_loaded_and_what_its_first_requests_built():
    """A full collection walks every object the collector tracks; a worker freezes its
    start-up and warm-up objects so that those passes stop walking them (config/gunicorn.py)."""
    from types import SimpleNamespace

    from config import gunicorn

    worker = SimpleNamespace(wsgi=None)  # gunicorn gives its application; the home page aside
    gc.unfreeze()
    try:
        gunicorn.post_worker_init(worker)
        after_start = gc.get_freeze_count()
        assert after_start > 0
        # Frozen objects that die leave the count, so it may drop; a freeze adds thousands.
        built_by_requests = [[index] for index in range(5000)]  # what warm-up requests keep
        for _ in range(gunicorn.FREEZE_AFTER_REQUESTS - 1):
            gunicorn.post_request(worker, None, {}, None)
        before = gc.get_freeze_count()
        assert before <= after_start
        gunicorn.post_request(worker, None, {}, None)
        assert gc.get_freeze_count() >= before + len(built_by_requests)
        for _ in range(10):  # once only: later requests' objects stay collectable
            gunicorn.post_request(worker, None, {}, None)
        frozen = gc.get_freeze_count()
        more = [[index] for index in range(1000)]
        gunicorn.post_request(worker, None, {}, None)
        assert gc.get_freeze_count() <= frozen
        assert more
    finally:
        gc.unfreeze()


def test_gc_freeze_0_leaves_the_collector_alone(monkeypatch):
    from types import SimpleNamespace

    from config import gunicorn

    monkeypatch.setattr(gunicorn, "GC_FREEZE", False)
    worker = SimpleNamespace(wsgi=None)  # gunicorn gives its application; the home page aside
    gc.unfreeze()
    gunicorn.post_worker_init(worker)
    for _ in range(gunicorn.FREEZE_AFTER_REQUESTS):
        gunicorn.post_request(worker, None, {}, None)
    assert gc.get_freeze_count() == 0


GUNICORN_ACCESS_ATOMS = """
import datetime, logging, types
from gunicorn.config import Config
import config.gunicorn as settings
from gunicorn.glogging import Logger
built = []
real_atoms = Logger.atoms
Logger.atoms = lambda self, *args: built.append(1) or real_atoms(self, *args)
cfg = Config()
cfg.set("logconfig_dict", settings.logconfig_dict)
cfg.set("logger_class", settings.logger_class)
log = cfg.logger_class(cfg)
resp = types.SimpleNamespace(status="200 OK", response_length=2, sent=2, headers=[])
req = types.SimpleNamespace(headers=[], method="GET", path="/healthz", query="", uri="/healthz",
                            version=(1, 1))
environ = {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "GET", "RAW_URI": "/healthz",
           "SERVER_PROTOCOL": "HTTP/1.1", "QUERY_STRING": ""}
log.access(resp, req, environ, datetime.timedelta(milliseconds=3))
held_back = len(built)
logging.getLogger("gunicorn.access").setLevel(logging.INFO)
log.access(resp, req, environ, datetime.timedelta(milliseconds=3))
print(held_back, len(built) - held_back)
"""


@pytest.mark.worker
def test_gunicorn_formats_a_request_s_access_line_only_when_it_is_written():
    """gunicorn builds each request's access line whenever a logging configuration is given;
    config/gunicorn.py holds the line back by level, so it must not be built either (a cost
    on every request); lowered to INFO, the line is built and written."""
    done = subprocess.run(
        [sys.executable, "-c", GUNICORN_ACCESS_ATOMS],
        cwd=django_settings.BASE_DIR,
        env={**os.environ, "LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "0 1", done.stdout
    written = (done.stdout + done.stderr).splitlines()
    assert any('"logger": "gunicorn.access"' in line for line in written), written
