"""`make run` serves the demo on its embedded defaults (SQLite, the filesystem broker), and
ends with Ctrl-C, which must look like a clean stop: the terminal's SIGINT reaches every
process of its group, and no process reports an error, nor make a failure. The test runs the
recipe's own command line (from `make -n`, which runs nothing) in a fresh folder, takes the
demo quiz through it as a student's browser without JavaScript would, and presses Ctrl-C."""

from __future__ import annotations

import html
import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.quiz_helpers import OPTION_IDS, QUESTION_ID

ROOT = Path(__file__).resolve().parents[2]
SERVER_ENV = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY", "DEBUG")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Browser:
    """A cookie jar and redirects followed; each form's CSRF token read from its page."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str) -> tuple[str, str]:
        with self.opener.open(self.base + path, timeout=30) as response:
            return response.geturl(), response.read().decode()

    def post(self, page: str, action: str, fields: dict[str, str]) -> tuple[str, str]:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}).encode()
        with self.opener.open(self.base + html.unescape(action), data, timeout=30) as response:
            return response.geturl(), response.read().decode()


def take_the_demo_quiz(base: str) -> tuple[Browser, str]:
    """The demo student's whole quiz, each answer the first option: their browser and the
    results page."""
    browser = Browser(base)
    _, page = browser.get("/")
    _, page = browser.post(page, "/lti/demo/launch/", {"role": "learner"})
    start = re.search(r'<form action="([^"]*/start/)"', page)[1]
    url, page = browser.post(page, start, {})
    for position in range(1, 9):
        assert f"Question {position} of 8" in page, (position, url, page[:2000])
        form = re.search(r'<form class="question" action="([^"]+)".*?</form>', page, re.S)
        question = QUESTION_ID.search(form[0])[1]
        option = OPTION_IDS.search(form[0])[1]
        url, page = browser.post(page, form[1], {"question": question, "option": option})
        assert 'class="explanation"' in page, (position, url, page[:2000])
    assert 'id="score"' in page, (url, page[:2000])  # the last answer's page: the results
    return browser, page


@pytest.mark.worker
def test_make_run_serves_the_demo_quiz_and_ctrl_c_stops_everything_without_errors(tmp_path):
    port = free_port()
    # Under `make test` the parent make's MAKEFLAGS and MAKELEVEL would make this one print
    # "Entering/Leaving directory" lines around the recipe.
    inherited = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    make_env = {k: v for k, v in os.environ.items() if k not in inherited}
    recipe = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", f"PORT={port}"],
        cwd=ROOT,
        env=make_env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    command = recipe[-1]
    assert "honcho start" in command
    env = {k: v for k, v in os.environ.items() if k not in SERVER_ENV}
    env["GCQUIZ_VAR_DIR"] = str(tmp_path)
    for args in (["migrate", "--noinput"], ["load_quiz"]):
        subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**env, "DEBUG": "1"},
            check=True,
            capture_output=True,
        )
    run = subprocess.Popen(
        ["sh", "-c", command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except OSError:
                assert run.poll() is None, run.stdout.read()
                assert time.monotonic() < deadline, "no answer on /healthz in 120 s"
                time.sleep(0.5)
        base = f"http://127.0.0.1:{port}"
        browser, results = take_the_demo_quiz(base)
        assert re.search(r'id="score">Your score: \d of 8<', results)
        # The results' and the activity's pages read SQLite through plain statements too:
        # timestamps come back aware (an ISO time with its offset), ids as UUIDs (links).
        assert re.search(r'data-fact="finished"><time datetime="[^"]+\+00:00"', results)
        # ... and the grade, read with them, as decimals and a boolean: its figures and no
        # override note (SQLite's 0 for false).
        grade = re.search(r'data-fact="grade">(.*?)<br>', results, re.S)[1]
        assert re.fullmatch(r"\d\.00 / 8\.00 \(\d+(\.\d+)?%\)", grade.strip()), grade
        quiz_page = re.search(r'<p class="quiz-title"><a href="([^"]+)"', results)[1]
        _, activity = browser.get(html.unescape(quiz_page))
        review = re.search(
            r'<a href="(/attempts/[0-9a-f-]{36}/summary/)">Review attempt 1<', activity
        )
        assert review, activity[:3000]
        _, again = browser.get(review[1])
        assert re.search(r'id="score">Your score: \d of 8<', again)
        time.sleep(3)  # the workers and beat finish starting
        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C
        output, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:  # a failure above: Ctrl-C still, since honcho's processes
            os.killpg(run.pid, signal.SIGINT)  # are each in a group of their own
            try:
                run.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 0, output[-3000:]
    assert "SIGINT received" in output
    for name in ("web", "worker", "gpu-worker", "beat"):
        assert f"{name}.1 stopped" in output
    problems = [line for line in output.splitlines() if "ERROR" in line or "Traceback" in line]
    assert problems == []
