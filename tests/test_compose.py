"""docker-compose.yml describes the production stack (validated fully by the ops issue)."""

from pathlib import Path

import yaml
from django.conf import settings


def test_compose_runs_web_worker_beat_postgres_and_redis_from_one_image():
    compose = yaml.safe_load((Path(settings.BASE_DIR) / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"web", "worker", "beat", "postgres", "redis", "migrate"} <= set(services)
    assert {services[name]["image"] for name in ("web", "worker", "beat", "migrate")} == {
        "gcquiz:latest"
    }
    assert "worker" in services["worker"]["command"] and "beat" in services["beat"]["command"]
    for name in ("web", "worker", "postgres", "redis"):
        assert "healthcheck" in services[name], name
    environment = services["web"]["environment"]
    assert environment["DEBUG"] == "0" and environment["REDIS_URL"].startswith("redis://")
    assert environment["DATABASE_URL"].startswith("postgres://")


def test_lab_runs_have_a_gpu_worker_on_the_gpu_queue_alone():
    compose = yaml.safe_load((Path(settings.BASE_DIR) / "docker-compose.yml").read_text())
    gpu = compose["services"]["gpu-worker"]
    assert "-Q gpu" in gpu["command"] and "--concurrency 1" in gpu["command"]
    assert gpu["build"]["args"]["EXTRAS"] == "labs"
    [device] = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
    assert "healthcheck" in gpu
    assert "-Q" not in compose["services"]["worker"]["command"]  # default queue only
    assert "load_labs" in compose["services"]["migrate"]["command"]
    dockerfile = (Path(settings.BASE_DIR) / "Dockerfile").read_text()
    for app in ("assessments", "lti", "gradesync", "labs", "api"):
        assert f"COPY {app} {app}" in dockerfile, app
