"""The one leased-job helper (ops.jobs) that grade sync and lab runs share, and the Celery
tasks it sends: named explicitly, routed and scheduled by those names."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from ops.jobs import RetryPolicy


def test_retries_back_off_with_jitter_and_honour_retry_after():
    policy = RetryPolicy(base_seconds=10, max_seconds=100)
    third = [policy.delay(3) for _ in range(200)]
    assert all(30 <= delay <= 50 for delay in third)  # 40 s ± 25 %
    assert len({round(delay, 3) for delay in third}) > 100  # spread, not one moment
    assert all(policy.delay(30) <= 100 for _ in range(50))  # capped
    assert policy.delay(1, retry_after=7) == 7  # the other side's Retry-After, exactly
    assert policy.delay(1, retry_after=5000) == 100  # but never past the cap


def test_retries_give_up_after_n_tries_or_after_some_time():
    by_tries = RetryPolicy(base_seconds=1, max_seconds=10, max_tries=3)
    assert not by_tries.gives_up(2)
    assert by_tries.gives_up(3)
    by_age = RetryPolicy(base_seconds=1, max_seconds=10, give_up_after_seconds=60)
    now = timezone.now()
    assert not by_age.gives_up(50, first_due=now - timedelta(seconds=59), now=now)
    assert by_age.gives_up(1, first_due=now - timedelta(seconds=61), now=now)


OUR_APPS = {"assessments", "lti", "gradesync", "labs", "analytics", "ops", "api"}


def test_every_task_is_named_explicitly_and_the_routes_and_beat_use_those_names():
    from config.celery import app

    app.loader.import_default_modules()
    ours = {name: task for name, task in app.tasks.items() if name.split(".")[0] in OUR_APPS}
    assert len(ours) >= 6
    for name, task in ours.items():
        # "labs.execute_run", not the module path Celery would make up ("labs.tasks.…"),
        # which a move or a rename of the function would change under queued messages.
        assert name.count(".") == 1, name
        assert ".tasks." not in name, name
        assert task.name == name
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in ours, entry
    for name in settings.CELERY_TASK_ROUTES:
        assert name in ours, name


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function, relative ones resolved
    against its package."""
    package = path.parent.name
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                found |= {f"{package}.{base or alias.name}" for alias in node.names}
            else:
                found.add(base)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_no_service_imports_its_tasks():
    """Tasks wrap services; services send tasks by name (ops.jobs), so the two never import
    each other, not even inside a function."""
    root = Path(settings.BASE_DIR)
    checked = 0
    for services in root.glob("*/services.py"):
        imported = _imported_modules(services)
        assert not any(module.endswith(".tasks") for module in imported), services
        checked += 1
    assert checked >= 4
    assert not {"labs", "gradesync", "assessments", "lti"} & {
        module.split(".")[0] for module in _imported_modules(root / "ops" / "jobs.py")
    }
