"""A web worker's warm-up (ops.warmup, decision 59): what its first requests would build is
built before it takes one, and a step that cannot run (the database away) does not stop it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

from assessments.services import load_quiz

# In a fresh interpreter, as a gunicorn worker after loading the application: the warm-up,
# then what it left built.
WARM_UP = """
import json, sys, django
django.setup()
from django.template import engines
from assessments import selectors
from assessments.models import Quiz
from ops.warmup import warm_up
failed = warm_up()
loader = engines["django"].engine.template_loaders[0]
print(json.dumps({
    "failed": failed,
    "views imported": all(name in sys.modules for name in ("lti.views", "pylti1p3.message_launch")),
    "templates": sorted(key for key in loader.get_template_cache if key.startswith("assessments/")),
    "layouts": sorted(selectors._layouts),
    "current": [] if failed else list(Quiz.objects.values_list("current_version_id", flat=True)),
}))
"""


def warm_up_in_a_fresh_process(database_url: str) -> dict:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "LOG_LEVEL": "ERROR",
    }
    done = subprocess.run(
        [sys.executable, "-c", WARM_UP],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _database_url(name: str) -> str:
    params = connection.settings_dict
    return f"postgres://{params['USER']}@{params['HOST']}:{params['PORT']}/{name}"


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_builds_what_its_first_requests_would(seed_content):
    version = load_quiz(seed_content).quiz.current_version_id

    built = warm_up_in_a_fresh_process(_database_url(connection.settings_dict["NAME"]))

    assert built["failed"] == []
    assert built["views imported"]
    assert {"assessments/question.html", "assessments/feedback.html"} <= set(built["templates"])
    assert built["layouts"] == [version] == built["current"]


@pytest.mark.worker
def test_a_worker_whose_database_is_away_still_warms_up_the_rest():
    built = warm_up_in_a_fresh_process(_database_url("no_such_database_here"))

    assert built["failed"] == ["_connections", "_apps"]
    assert built["views imported"]
    assert "assessments/question.html" in built["templates"]
