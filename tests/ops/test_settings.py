"""One settings module, driven by the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

SHOW = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, "
    "s.CACHES['default']['BACKEND']]))"
)


def run_settings(tmp_path, show: str = SHOW, **env: str) -> subprocess.CompletedProcess:
    clean = {
        key: value
        for key, value in os.environ.items()
        if key not in {"SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"}
    }
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", GCQUIZ_VAR_DIR=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "-c", show],
        cwd=settings.BASE_DIR,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.worker
def test_secret_key_is_required_when_debug_is_off(tmp_path):
    result = run_settings(tmp_path, DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


@pytest.mark.worker
def test_embedded_defaults_need_no_server(tmp_path):
    result = run_settings(tmp_path, DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        '["django.db.backends.sqlite3", "filesystem://", '
        '"django.core.cache.backends.filebased.FileBasedCache"]'
    )
    assert (tmp_path / "dev-secret-key").exists()


@pytest.mark.worker
def test_production_services_come_from_the_environment(tmp_path):
    result = run_settings(
        tmp_path,
        SECRET_KEY="x" * 50,
        DATABASE_URL="postgres://u@db:5432/gcquiz",
        REDIS_URL="redis://cache:6379/0",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        '["ops.postgresql", "redis://cache:6379/0", "ops.cache.RedisCache"]'
    )


SHOW_DATABASE_OPTIONS = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps(s.DATABASES['default'].get('OPTIONS', {}), sort_keys=True))"
)
GENERIC_PLANS = "-c plan_cache_mode=force_generic_plan"
PREPARED = {"prepare_threshold": 0, "server_side_binding": True, "options": GENERIC_PLANS}
# A database that drops packets fails a connection in seconds, not the system's minutes.
GIVE_UP = {"connect_timeout": 5}


@pytest.mark.worker
@pytest.mark.parametrize(
    ("url", "prepared", "expected"),
    [
        # The URL's own options (TLS to a managed database) stay, whatever is added.
        (
            "postgres://u@db:5432/gcquiz?sslmode=require",
            "1",
            {"sslmode": "require", **PREPARED, **GIVE_UP},
        ),
        ("postgres://u@db:5432/gcquiz?sslmode=require", "0", {"sslmode": "require", **GIVE_UP}),
        # A libpq `options` of the URL's own comes first.
        (
            "postgres://u@db:5432/gcquiz?options=-c%20statement_timeout%3D5000",
            "1",
            {**PREPARED, **GIVE_UP, "options": f"-c statement_timeout=5000 {GENERIC_PLANS}"},
        ),
        # So does the URL's own connect_timeout.
        ("postgres://u@db:5432/gcquiz?connect_timeout=20", "0", {"connect_timeout": 20}),
        # psycopg's options only for PostgreSQL: another backend would refuse them.
        ("sqlite:///gcquiz.sqlite3", "1", {"init_command", "timeout", "transaction_mode"}),
    ],
)
def test_prepared_statements_keep_the_urls_options_and_only_on_postgresql(
    tmp_path, url, prepared, expected
):
    result = run_settings(
        tmp_path,
        show=SHOW_DATABASE_OPTIONS,
        SECRET_KEY="x" * 50,
        DATABASE_URL=url,
        DATABASE_PREPARED_STATEMENTS=prepared,
    )
    assert result.returncode == 0, result.stderr
    options = json.loads(result.stdout)
    assert (set(options) if isinstance(expected, set) else options) == expected


@pytest.mark.worker
def test_malformed_boolean_is_a_clear_error(tmp_path):
    result = run_settings(tmp_path, DEBUG="maybe", SECRET_KEY="x" * 50)
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


def test_the_test_suite_runs_on_postgresql_and_redis():
    # `make test` and CI point the suite at the real servers; never silently at SQLite.
    assert settings.DATABASES["default"]["ENGINE"] == "ops.postgresql"
    assert settings.CELERY_BROKER_URL.startswith("redis://")
