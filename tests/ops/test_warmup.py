"""A web worker's warm-up (ops.warmup, decision 59): what its first requests would build is
built before it takes one, and a step that cannot run (the database away) does not stop it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from assessments.services import load_quiz
from lti import platform_keys
from lti.models import Deployment, Registration

# In a fresh interpreter, as a gunicorn worker after loading the application: the warm-up,
# then what it left built.
WARM_UP = """
import json, sys, django
django.setup()
from django.template import engines
from assessments import selectors
from assessments.models import Quiz
from django.db import connection
from lti import platform_keys, registrations_memo
from ops.warmup import warm_up
from config.wsgi import application
failed = warm_up(application)
loader = engines["django"].engine.template_loaders[0]
prepared = []
if not failed and connection.vendor == "postgresql":
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
print(json.dumps({
    "failed": failed,
    "views imported": all(name in sys.modules for name in ("lti.views", "pylti1p3.message_launch")),
    "templates": sorted(key for key in loader.get_template_cache if key.startswith("assessments/")),
    "layouts": sorted(selectors._layouts),
    "current": [] if failed else list(Quiz.objects.values_list("current_version_id", flat=True)),
    "registrations kept": [
        list(key) for key in registrations_memo.registrations.entries if key[0] == "registrations"
    ],
    "key sets kept": sorted(platform_keys._read),
    "prepared": prepared,
    "framing origins kept": registrations_memo.last_known("framing origins") is not None,
    "messages' storage imported": "django.contrib.messages.storage.fallback" in sys.modules,
}))
"""


def warm_up_in_a_fresh_process(database_url: str) -> dict:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url,
        "LOG_LEVEL": "ERROR",
        "ALLOWED_HOSTS": "tool.example.edu",
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
    registration = Registration.objects.create(
        issuer="https://lms.example.edu",
        client_id="c-1",
        auth_login_url="https://lms.example.edu/auth",
        auth_token_url="https://lms.example.edu/token",
        keyset_url="https://lms.example.edu/jwks",
    )
    Deployment.objects.create(registration=registration, deployment_id="1")
    # The key set as the cache holds it: the warm-up keeps it, fetching nothing.
    cache.set(platform_keys._cache_key(registration.keyset_url, "set"), {"keys": []}, 60)

    built = warm_up_in_a_fresh_process(_database_url(connection.settings_dict["NAME"]))

    assert built["failed"] == []
    assert built["views imported"]
    assert {"assessments/question.html", "assessments/feedback.html"} <= set(built["templates"])
    assert built["layouts"] == [version] == built["current"]
    # What a login and a launch look up, kept; and the launch's and the pages' reads
    # prepared on the worker's connection.
    assert sorted(built["registrations kept"]) == [
        ["registrations", registration.issuer, "c-1", ""],
        ["registrations", registration.issuer, "c-1", "1"],
    ]
    assert built["key sets kept"] == [registration.keyset_url]
    prepared = " ".join(built["prepared"])
    assert 'FROM "lti_ltiuser" lu' in prepared  # the member's read
    assert "a.placement_id = $1 AND a.user_id = $2 AND a.state = $3" in prepared
    assert "a.public_id = $1 AND a.user_id = $2" in prepared
    # What only a request builds: the home page was asked of the worker's application.
    assert built["framing origins kept"]
    assert built["messages' storage imported"]


@pytest.mark.worker
def test_a_worker_whose_database_is_away_still_warms_up_the_rest():
    built = warm_up_in_a_fresh_process(_database_url("no_such_database_here"))

    assert built["failed"] == ["_connections", "_apps"]
    assert built["views imported"]
    assert "assessments/question.html" in built["templates"]
