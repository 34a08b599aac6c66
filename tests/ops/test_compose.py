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
    assert {
        "proxy", "web", "worker", "lab-worker", "gpu-worker", "beat", "postgres", "redis",
        "migrate",
    } <= set(SERVICES)  # fmt: skip
    for name, service in SERVICES.items():
        check = service.get("healthcheck", {})
        if name == "migrate":
            assert service["restart"] == "no"
            assert check == {"disable": True}
            continue
        assert check.get("test"), name
    assert SERVICES["web"]["healthcheck"]["test"][-3:] == ["-m", "ops.healthcheck", "ready"]
    assert "/healthz" in " ".join(SERVICES["proxy"]["healthcheck"]["test"])
    assert SERVICES["beat"]["healthcheck"]["test"][-3:] == [
        "ops.healthcheck", "beat", "/var/lib/gcquiz/beat/celerybeat-schedule",
    ]  # fmt: skip
    assert "--schedule /var/lib/gcquiz/beat/celerybeat-schedule" in SERVICES["beat"]["command"]
    assert "gunicorn" in SERVICES["web"]["command"]
    named = set(COMPOSE["volumes"])
    for name in ("postgres", "redis", "beat"):
        for volume in SERVICES[name].get("volumes", []):
            assert volume.split(":")[0] in named, (name, volume)
    for name in ("web", "worker", "lab-worker", "gpu-worker", "beat"):
        depends = SERVICES[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
    assert SERVICES["proxy"]["depends_on"]["web"]["condition"] == "service_healthy"
    assert SERVICES["migrate"]["command"] == "python manage.py deploy"
    # One build of the application image (migrate's), which the others use as it is.
    for name in ("web", "worker", "beat"):
        assert "build" not in SERVICES[name], name
        assert SERVICES[name]["pull_policy"] == "never", name
        assert SERVICES[name]["image"] == SERVICES["migrate"]["image"], name


def test_only_the_proxy_publishes_a_port_bound_to_loopback_and_only_it_is_trusted():
    published = {name: service["ports"] for name, service in SERVICES.items() if "ports" in service}
    assert list(published) == ["proxy"]  # so `--scale web=N` needs no host port per replica
    [port] = published["proxy"]
    assert port == "${PROXY_BIND:-127.0.0.1}:${PROXY_PORT:-8000}:8080"
    assert "expose" not in SERVICES["web"]
    # The proxy and the web replicas share a network of their own, whose subnet is the only
    # source gunicorn takes X-Forwarded-Proto from; Django does not read the header itself.
    assert SERVICES["proxy"]["networks"] == ["edge"]
    assert set(SERVICES["web"]["networks"]) == {"default", "edge"}
    [subnet] = COMPOSE["networks"]["edge"]["ipam"]["config"]
    assert SERVICES["web"]["environment"]["FORWARDED_ALLOW_IPS"] == subnet["subnet"]
    for name in ("web", "worker", "beat", "migrate", "lab-worker"):
        assert SERVICES[name]["environment"]["BEHIND_HTTPS_PROXY"] == "0", name
    nginx = (ROOT / "docker/proxy/nginx.conf").read_text()
    assert "proxy_set_header X-Forwarded-Proto $forwarded_proto;" in nginx
    assert 'proxy_set_header X-Forwarded-Ssl "";' in nginx
    assert "resolver 127.0.0.11" in nginx  # replicas come and go: resolve web at run time


def test_metrics_are_shared_and_no_deploy_step_deletes_them():
    folder = SERVICES["web"]["environment"]["PROMETHEUS_MULTIPROC_DIR"]
    for name in ("web", "worker", "lab-worker", "gpu-worker", "beat", "migrate"):
        assert SERVICES[name]["environment"]["PROMETHEUS_MULTIPROC_DIR"] == folder, name
        assert f"metrics:{folder}" in SERVICES[name]["volumes"], name
    for service in SERVICES.values():
        command = service.get("command", "")
        assert "-delete" not in command
        assert "rm " not in command


def test_labs_run_on_a_cpu_worker_unless_the_gpu_profile_adds_the_gpu_worker():
    gpu = SERVICES["gpu-worker"]
    assert gpu["profiles"] == ["gpu"]
    assert "-Q gpu" in gpu["command"]
    assert "--concurrency 1" in gpu["command"]
    assert gpu["build"]["args"]["EXTRAS"] == "labs"
    [device] = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia"
    assert "gpu" in device["capabilities"]
    # Without the profile (a host without a GPU) the CPU lab worker consumes the same queue,
    # from an image with PyTorch's CPU build rather than the CUDA one.
    cpu = SERVICES["lab-worker"]
    assert "profiles" not in cpu
    assert "-Q gpu" in cpu["command"]
    assert "--concurrency 1" in cpu["command"]
    assert cpu["build"]["args"]["EXTRAS"] == "labs"
    assert "download.pytorch.org/whl/cpu" in cpu["build"]["args"]["PIP_EXTRA_INDEX_URL"]
    assert cpu["image"] != gpu["image"]
    assert cpu["environment"]["LAB_DEVICE"] == "cpu"
    unprofiled = [name for name, service in SERVICES.items() if "profiles" not in service]
    assert "gpu-worker" not in unprofiled
    assert "deploy" not in cpu
    assert "-Q" not in SERVICES["worker"]["command"]  # the default queue only
    dockerfile = (ROOT / "Dockerfile").read_text()
    for app in ("activities", "assessments", "lti", "gradesync", "labs", "analytics", "ops", "api"):
        assert f"COPY {app} {app}" in dockerfile, app


def test_celery_processes_start_without_their_plain_text_banners():
    for name in ("worker", "lab-worker", "gpu-worker", "beat"):
        assert SERVICES[name]["command"].startswith("celery -A config --quiet "), name


def test_the_docs_name_the_docker_versions_they_need():
    operations = (ROOT / "docs/operations.md").read_text()
    assert "Docker Engine 20.10" in operations
    assert "Compose v2" in operations


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


@pytest.mark.worker
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
    env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path)  # the volume's folder, on this machine
    assert env["DEBUG"] == "0"
    assert env["SECURE_SSL_REDIRECT"] == "1"
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
