"""docker-compose.yml and the production settings, checked without a Docker engine: the
file against the Compose Specification's schema, its services' health checks, and Django's
deployment checks with the environment the compose file gives the web service."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def test_compose_file_follows_the_compose_specification():
    schema = json.loads((ROOT / "tests/data/compose_spec.json").read_text())
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(COMPOSE)]
    assert errors == []
    broken = {**COMPOSE, "services": {**SERVICES, "web": {**SERVICES["web"], "helthcheck": {}}}}
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))  # the check can fail


def test_every_long_running_service_has_a_health_check_and_state_is_in_named_volumes():
    assert {"web", "worker", "gpu-worker", "beat", "postgres", "redis", "migrate"} <= set(SERVICES)
    for name, service in SERVICES.items():
        check = service.get("healthcheck", {})
        if name == "migrate":
            assert service["restart"] == "no" and check == {"disable": True}
            continue
        assert check.get("test"), name
    assert "/readyz" in " ".join(SERVICES["web"]["healthcheck"]["test"])
    assert "gunicorn" in SERVICES["web"]["command"]
    named = set(COMPOSE["volumes"])
    for name in ("postgres", "redis", "beat"):
        for volume in SERVICES[name].get("volumes", []):
            assert volume.split(":")[0] in named, (name, volume)
    for name in ("web", "worker", "gpu-worker", "beat"):
        depends = SERVICES[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
    assert "migrate --noinput" in SERVICES["migrate"]["command"]


def test_each_deploy_empties_the_metrics_folder_before_anything_starts():
    folder = SERVICES["web"]["environment"]["PROMETHEUS_MULTIPROC_DIR"]
    assert any(volume.endswith(f":{folder}") for volume in SERVICES["web"]["volumes"])
    command = SERVICES["migrate"]["command"]
    assert f"find {folder} -name '*.db' -delete &&" in command
    assert command.index("-delete") < command.index("migrate --noinput")


def test_lab_runs_have_a_gpu_worker_on_the_gpu_queue_alone():
    gpu = SERVICES["gpu-worker"]
    assert "-Q gpu" in gpu["command"] and "--concurrency 1" in gpu["command"]
    assert gpu["build"]["args"]["EXTRAS"] == "labs"
    [device] = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
    assert "-Q" not in SERVICES["worker"]["command"]  # the default queue only
    assert "load_labs" in SERVICES["migrate"]["command"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    for app in ("assessments", "lti", "gradesync", "labs", "analytics", "ops", "api"):
        assert f"COPY {app} {app}" in dockerfile, app


def settings_variables() -> set[str]:
    source = (ROOT / "config/settings.py").read_text()
    names = set(re.findall(r'os\.environ\.get\("([A-Z_]+)"', source))
    names |= set(re.findall(r'env_(?:bool|list)\("([A-Z_]+)"', source))
    return names - {"GCQUIZ_VAR_DIR", "STATIC_ROOT", "DEBUG"}


def env_example() -> dict[str, str]:
    pairs = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key] = value
    return pairs


def test_env_example_lists_every_setting():
    missing = settings_variables() - set(env_example())
    assert not missing


def production_environment() -> dict[str, str]:
    """The web service's environment as compose would interpolate it from .env.example,
    with the required secrets filled in."""
    values = {
        **env_example(),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "POSTGRES_PASSWORD": "pw",
        "ALLOWED_HOSTS": "quiz.example.edu",
    }

    def interpolate(text: str) -> str:
        def one(match: re.Match) -> str:
            name, rule, fallback = match.group(1), match.group(2), match.group(3) or ""
            value = values.get(name, "")
            if rule == ":?":
                assert value, f"{name} is required"
                return value
            return value or interpolate(fallback)

        return re.sub(r"\$\{([A-Z_]+)(:[-?])?((?:[^{}]|\{[^{}]*\})*)\}", one, text)

    environment = {key: interpolate(str(value)) for key, value in values.items()}
    environment.update(
        {key: interpolate(str(value)) for key, value in SERVICES["web"]["environment"].items()}
    )
    return environment


def test_deployment_checks_pass_with_the_production_environment(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(
            ("DATABASE_", "REDIS_", "CELERY_", "SECRET_", "DEBUG", "DJANGO_ALLOW")
        )
    }
    env.update(production_environment())
    env["GCQUIZ_VAR_DIR"] = str(tmp_path)
    assert env["DEBUG"] == "0" and env["SECURE_SSL_REDIRECT"] == "1"
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


@pytest.mark.parametrize("missing", ["SECRET_KEY", "LTI_TOOL_URL", "POSTGRES_PASSWORD"])
def test_compose_refuses_to_start_without_its_secrets(missing):
    text = (ROOT / "docker-compose.yml").read_text()
    assert f"${{{missing}:?" in text
