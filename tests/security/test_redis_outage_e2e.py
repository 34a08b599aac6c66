"""Finding 7, the whole story: a live server (gunicorn) and a real Celery worker and beat
use a redis-server of the test's own as cache and broker. A student answers; the test stops
that redis-server mid-attempt; the student keeps answering (every answer saved, no 500)
and finishes; the test starts Redis again, and the grade reaches the LMS."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import requests
from django.conf import settings

from assessments.models import Attempt, Option, Response
from gradesync.models import GradeSync, SyncState
from tests.grades_helpers import graded_placement, student
from tests.quiz_helpers import OPTION_IDS, QUESTION_ID, launched_client
from tests.workers import (
    PrivateRedis,
    Supervised,
    _env,
    free_port,
    start_beat,
    start_worker,
    wait_until,
)
from tests.workers import stop as stop_process

CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def start_web(env: dict[str, str], port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application"],
        cwd=settings.BASE_DIR,
        env=_env({**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "2"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers() -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).ok
        except requests.RequestException:
            return False

    assert wait_until(answers, timeout=60), "gunicorn did not start"
    return process


class Student:
    """A browser session on the live server, signed in as a launch leaves it."""

    def __init__(self, base: str, membership) -> None:
        self.base = base
        self.http = requests.Session()
        signed_in = launched_client(membership)
        self.http.cookies.set(settings.SESSION_COOKIE_NAME, signed_in.session.session_key)
        self.statuses: list[int] = []

    def _record(self, response: requests.Response) -> requests.Response:
        self.statuses += [step.status_code for step in (*response.history, response)]
        return response

    def get(self, path: str) -> requests.Response:
        return self._record(self.http.get(self.base + path, timeout=30))

    def post(self, path: str, data: dict, page: str) -> requests.Response:
        token = CSRF_FIELD.search(page).group(1)
        return self._record(
            self.http.post(self.base + path, {**data, "csrfmiddlewaretoken": token}, timeout=30)
        )

    def answer_current(self, path: str) -> requests.Response:
        shown_page = self.get(path)
        assert shown_page.status_code == 200, shown_page.status_code
        page = shown_page.text
        question = QUESTION_ID.search(page).group(1)
        shown = [int(option) for option in OPTION_IDS.findall(page)]
        right = Option.objects.get(pk__in=shown, is_correct=True)
        return self.post(f"{path}answer/", {"question": question, "option": right.pk}, page)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_student_answers_through_a_redis_outage_and_the_grade_reaches_the_lms(
    fake_lms, quiz, tmp_path
):
    redis = PrivateRedis(tmp_path)
    env = {
        "REDIS_URL": redis.url,
        "CELERY_BROKER_URL": redis.url,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_COOKIES": "0",
        "GRADESYNC_REQUEUE_SECONDS": "1",
        "GRADESYNC_BACKOFF_BASE_SECONDS": "0.2",
        "GRADESYNC_BACKOFF_MAX_SECONDS": "2",
    }
    placement = graded_placement(fake_lms, quiz)
    user = student(placement, "outage-student")
    port = free_port()
    log = tmp_path / "celery.log"
    web = start_web(env, port)
    worker = Supervised(lambda: start_worker("celery", env, log=log))
    beat = Supervised(lambda: start_beat(tmp_path / "beat-schedule", env, log=log))
    try:
        browser = Student(f"http://127.0.0.1:{port}", user.lti_memberships.get())
        page = browser.get(f"/quiz/{placement.pk}/")
        assert page.status_code == 200, page.text[:300]
        started = browser.post(f"/quiz/{placement.pk}/start/", {}, page.text)
        attempt = Attempt.objects.get(user=user)
        path = f"/attempts/{attempt.public_id}/"
        assert started.status_code == 200
        assert f'<link rel="canonical" href="{path}">' in started.text  # answered by question 1
        for _ in range(3):
            assert browser.answer_current(path).status_code == 200

        redis.stop()
        ready = requests.get(f"{browser.base}/readyz", timeout=30)
        assert ready.status_code == 200  # degraded, still in rotation
        assert ready.json()["status"] == "degraded"
        assert ready.json()["redis"].startswith("unavailable")
        for number in range(4, 9):
            assert browser.answer_current(path).status_code == 200
            assert Response.objects.filter(attempt=attempt).count() == number
        summary = browser.get(f"{path}summary/")
        assert summary.status_code == 200
        assert "Your score: 8 of 8" in summary.text
        assert GradeSync.objects.get(user=user).state == SyncState.PENDING

        redis.start()

        def delivered() -> bool:
            worker.check()
            beat.check()
            return GradeSync.objects.filter(user=user, state=SyncState.SYNCED).exists()

        assert wait_until(delivered, timeout=120, interval=0.5), log.read_text()[-3000:]
        assert browser.get(f"/quiz/{placement.pk}/").status_code == 200
        assert requests.get(f"{browser.base}/readyz", timeout=30).json()["status"] == "ready"
    finally:
        stop_process(web)
        worker.stop()
        beat.stop()
        redis.stop()

    assert all(status < 500 for status in browser.statuses), browser.statuses
    held = fake_lms.scores[(fake_lms.lineitem_id(placement.lineitem_url), "outage-student")]
    assert held["scoreGiven"] == 8.0
