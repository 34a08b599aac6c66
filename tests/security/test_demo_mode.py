"""Finding 6: the demo (anonymous visitors become demo users, queue lab runs) is on only
with DEBUG unless turned on, its entries are rate-limited per address (test_rate_limits.py),
and its lab runs cannot flood the GPU queue."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model

from activities.demo import enrol_demo_member
from labs.models import LabRun, RunStatus
from lti.models import Role
from tests.labs_helpers import lab_placement, small_lab
from tests.quiz_helpers import launched_client

SHOW = "import django; django.setup(); from django.conf import settings as s; print(s.DEMO_MODE)"

# (DEBUG, DEMO_MODE or None for unset, the demo is on)
DEFAULTS = [
    ("0", None, False),
    ("1", None, True),
    ("0", "1", True),
    ("1", "0", False),
]


@pytest.mark.worker
@pytest.mark.parametrize(("debug", "demo_mode", "expected"), DEFAULTS)
def test_demo_mode_defaults_to_debug(tmp_path, debug, demo_mode, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DEMO_MODE")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", GCQUIZ_VAR_DIR=str(tmp_path), DEBUG=debug)
    if demo_mode is not None:
        env["DEMO_MODE"] = demo_mode
    shown = subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout.strip().lower()) is expected


@pytest.mark.django_db
@pytest.mark.usefixtures("quiz")
def test_with_the_demo_off_no_visitor_becomes_a_demo_user(client, settings):
    settings.DEMO_MODE = False
    users = get_user_model().objects.count()
    for role, activity in (("learner", "quiz"), ("staff", "quiz"), ("learner", "lab")):
        response = client.post("/lti/demo/launch/", {"role": role, "activity": activity})
        assert response.status_code == 404
    assert get_user_model().objects.count() == users
    assert "/lti/demo/launch/" not in client.get("/").content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("quiz")
def test_demo_lab_runs_stop_at_the_queue_cap(settings):
    settings.DEMO_LAB_QUEUE_CAP = 2
    lab = small_lab()
    students = [enrol_demo_member(Role.LEARNER) for _ in range(4)]
    placement = lab_placement(students[0].context, lab)
    policy = {"kind": "sqrt", "json": ""}

    def submit(membership):
        return launched_client(membership).post(f"/lab/{placement.pk}/runs/", policy)

    assert [submit(m).status_code for m in students[:2]] == [302, 302]
    refused = submit(students[2])
    assert refused.status_code == 503
    assert "lab queue is full (2 runs waiting)" in refused.content.decode()
    assert LabRun.objects.count() == 2
    # A run that finishes makes room again.
    LabRun.objects.filter(pk=LabRun.objects.first().pk).update(status=RunStatus.SUCCEEDED)
    assert submit(students[3]).status_code == 302
