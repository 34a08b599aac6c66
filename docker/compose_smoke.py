"""`make compose-smoke`: the production compose file, booted and used as an operator would.

Builds the images, boots the stack from a production-style .env (a real host name in
ALLOWED_HOSTS, HTTPS redirect on) under its own project name, waits for every service to be
healthy, then, through the proxy only: launches from the independent LTI platform
(tests/lti_platform.py) and answers the quiz, runs a lab on the CPU lab worker, scrapes
/metrics before and after a second `docker compose up` (the totals must carry on), scales web
to 2 replicas and checks that the proxy uses both, restarts everything and checks that the
data and the counters survived. Prints a table; exits 1 if a check failed. Not part of
`make test`: it needs a Docker engine (20.10+) and Compose v2, and takes minutes.

Environment:
  SMOKE_KEEP=1              leave the stack running (default: `down -v` at the end)
  SMOKE_CA_CERTS="a.crt …"  CA certificates to trust inside builds (a TLS-inspecting egress)
  SMOKE_WHEELS=/dir         wheels for builds that cannot download them (e.g. PyTorch CPU)
  LABS_CPU_EXTRA_INDEX_URL  as in .env.example (empty with SMOKE_WHEELS holding PyTorch)
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "gcquiz-smoke"
HOST = "quiz.example.edu"
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
LAST_RUN = (
    "SELECT status || ' on ' || device || ', score ' || coalesce(score::text, '-') "
    "FROM labs_labrun ORDER BY id DESC LIMIT 1"
)


@dataclass
class Row:
    step: str
    ok: bool
    detail: str
    seconds: float


ROWS: list[Row] = []


def record(step: str, ok: bool, detail: str, started: float) -> bool:
    ROWS.append(Row(step, ok, detail, time.monotonic() - started))
    print(f"[{'ok' if ok else 'FAILED'}] {step}: {detail}", flush=True)
    return ok


def table() -> str:
    width = max(len(row.step) for row in ROWS)
    lines = [
        f"| {'step'.ljust(width)} | result | seconds | detail",
        f"|{'-' * (width + 2)}|--------|---------|-------",
    ]
    for row in ROWS:
        lines.append(
            f"| {row.step.ljust(width)} | {'ok' if row.ok else 'FAILED':6} "
            f"| {row.seconds:7.1f} | {row.detail}"
        )
    return "\n".join(lines)


class Stack:
    """`docker compose` on a copy of the checkout with its own .env and project name."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.directory = directory
        self.env = env

    def compose(self, *args: str, check: bool = True, capture: bool = False, timeout: float = 1800):
        return subprocess.run(
            ["docker", "compose", "-p", PROJECT, *args],
            cwd=self.directory,
            env=self.env,
            check=check,
            timeout=timeout,
            text=True,
            capture_output=capture,
        )

    def sql(self, query: str) -> str:
        done = self.compose(
            "exec",
            "-T",
            "postgres",
            "psql",
            "-U",
            "gcquiz",
            "-d",
            "gcquiz",
            "-tAc",
            query,
            capture=True,
        )
        return done.stdout.strip()

    def containers(self) -> list[dict]:
        done = self.compose("ps", "-a", "--format", "json", capture=True)
        text = done.stdout.strip()
        if text.startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def wait_healthy(self, timeout: float = 600) -> tuple[bool, str]:
        deadline = time.monotonic() + timeout
        while True:
            states = {}
            for container in self.containers():
                name = container["Service"] + "#" + container["Name"].rsplit("-", 1)[-1]
                if container["Service"] == "migrate":
                    states[name] = (
                        "done"
                        if container.get("ExitCode") == 0 and container["State"] == "exited"
                        else container["State"]
                    )
                else:
                    states[name] = container.get("Health") or container["State"]
            waiting = {
                name: state for name, state in states.items() if state not in {"healthy", "done"}
            }
            if states and not waiting:
                return True, ", ".join(sorted(states))
            if time.monotonic() > deadline:
                return False, f"not healthy: {waiting}"
            time.sleep(5)


class Browser:
    """A browser behind the host's TLS terminator: it talks to the proxy's loopback port and
    says HTTPS (X-Forwarded-Proto), with the tool's public host name. The tool's cookies are
    Secure, which HTTP clients keep to HTTPS URLs: they are sent by hand."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.session = requests.Session()
        self.session.headers.update(
            {
                "Host": HOST,
                "X-Forwarded-Proto": "https",
                "Origin": f"https://{HOST}",
                "Referer": f"https://{HOST}/",
            }
        )

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.session.cookies)
        headers = {**({"Cookie": cookies} if cookies else {}), **kwargs.pop("headers", {})}
        return self.session.request(
            method, self.base + path, headers=headers, allow_redirects=False, timeout=60, **kwargs
        )

    def follow(self, response: requests.Response) -> requests.Response:
        while response.status_code in (301, 302, 303):
            location = urlsplit(response.headers["Location"])
            path = location.path + (f"?{location.query}" if location.query else "")
            response = self.request("GET", path)
        return response

    def csrf(self) -> str:
        return self.session.cookies.get("csrftoken", "")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare(build_dir: Path) -> None:
    """A copy of the checkout as git sees it, plus the builds' extra CA certificates and wheels."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        text=True,
        capture_output=True,
    ).stdout.split("\n")
    for name in files:
        source = ROOT / name
        if not name or not source.is_file() or name.startswith((".venv", "node_modules")):
            continue
        target = build_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    for cert in os.environ.get("SMOKE_CA_CERTS", "").split():
        shutil.copy2(cert, build_dir / "docker/ca-certificates" / (Path(cert).stem + ".crt"))
    wheels = os.environ.get("SMOKE_WHEELS")
    if wheels:
        for wheel in Path(wheels).glob("*.whl"):
            shutil.copy2(wheel, build_dir / "docker/wheels" / wheel.name)


def write_env(build_dir: Path, port: int) -> str:
    token = secrets.token_urlsafe(24)
    values = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": HOST,
        "CSRF_TRUSTED_ORIGINS": f"https://{HOST}",
        "POSTGRES_PASSWORD": secrets.token_urlsafe(16),
        "LTI_TOOL_URL": f"https://{HOST}/",
        "METRICS_TOKEN": token,
        "PROXY_PORT": str(port),
        "WEB_CONCURRENCY": "2",
        "LAB_TIMING_REPEATS": "2",
        # The smoke's LMS listens on the stack's network gateway, a private address.
        "LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES": "1",
    }
    if "LABS_CPU_EXTRA_INDEX_URL" in os.environ:
        values["LABS_CPU_EXTRA_INDEX_URL"] = os.environ["LABS_CPU_EXTRA_INDEX_URL"]
    lines = []
    for line in (ROOT / ".env.example").read_text().splitlines():
        key = line.partition("=")[0]
        lines.append(
            f"{key}={values.pop(key)}" if key in values and not line.startswith("#") else line
        )
    lines += [f"{key}={value}" for key, value in values.items()]
    (build_dir / ".env").write_text("\n".join(lines) + "\n")
    return token


def metric_total(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        series, _, value = line.rpartition(" ")
        if all(f'{key}="{wanted}"' in series for key, wanted in labels.items()):
            total += float(value)
    return total


def scrape(browser: Browser, token: str) -> dict[str, float]:
    response = browser.request("GET", "/metrics", headers={"Authorization": f"Bearer {token}"})
    response.raise_for_status()
    text = response.text
    return {
        "requests": metric_total(text, "gcquiz_http_requests_total"),
        "answers": metric_total(text, "gcquiz_http_requests_total", view="assessments:answer"),
        "tasks": metric_total(text, "gcquiz_celery_tasks_total"),
        "lab_runs": metric_total(text, "gcquiz_celery_tasks_total", task="labs.execute_run"),
    }


def platform_for(stack: Stack):
    """The independent LTI platform of the tests, served where the containers reach the host:
    the gateway of the stack's network."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "1"
    os.environ["GCQUIZ_VAR_DIR"] = tempfile.mkdtemp(prefix="gcquiz-smoke-var-")
    for name in ("DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from tests import lti_platform

    inspect = subprocess.run(
        [
            "docker",
            "network",
            "inspect",
            f"{PROJECT}_default",
            "--format",
            "{{(index .IPAM.Config 0).Gateway}}",
        ],
        check=True,
        text=True,
        capture_output=True,
    )
    gateway = inspect.stdout.strip()

    class OnGateway(lti_platform.ThreadingHTTPServer):
        def __init__(self, _address, handler) -> None:
            super().__init__((gateway, 0), handler)

    lti_platform.ThreadingHTTPServer = OnGateway
    server = lti_platform.PlatformServer()
    platform = lti_platform.Platform(
        server, client_id="smoke-client", deployment_id="1", tool=f"https://{HOST}"
    )
    stack.compose(
        "exec",
        "-T",
        "web",
        "python",
        "manage.py",
        "lti_add_registration",
        "--issuer",
        platform.issuer,
        "--client-id",
        platform.client_id,
        "--auth-login-url",
        server.url("/auth"),
        "--auth-token-url",
        server.url("/token"),
        "--keyset-url",
        server.url("/jwks"),
        "--deployment-id",
        "1",
        "--title",
        "Smoke LMS",
        capture=True,
    )
    return server, platform


def launch(browser: Browser, platform, user_id: str, link: str, custom: dict | None = None):
    params = platform.login_initiation(user_id=user_id)
    response = browser.request("GET", "/lti/login/?" + urlencode(params))
    assert response.status_code == 302, (response.status_code, response.text[:300])
    auth = {k: v[0] for k, v in parse_qs(urlsplit(response.headers["Location"]).query).items()}
    signed = platform.authorize(
        auth, user_id=user_id, roles=[ROLE + "Learner"], resource_link_id=link, custom=custom
    )
    response = browser.request("POST", "/lti/launch/", data=signed)
    # A redirect to the landing, or the question of an attempt in progress (decision 60).
    assert response.status_code in (200, 302), (response.status_code, response.text[:300])
    return browser.follow(response)


def answer_quiz(browser: Browser, placement_path: str) -> int:
    response = browser.follow(
        browser.request(
            "POST", placement_path + "start/", data={"csrfmiddlewaretoken": browser.csrf()}
        )
    )
    answered = 0
    while answered < 20:
        found = re.search(r'name="question" value="(\d+)"', response.text)
        option = re.search(r'name="option" value="(\d+)"', response.text)
        if not (found and option):
            break
        action = re.search(r'<form[^>]*action="([^"]*answer/)"', response.text)
        path = action.group(1) if action else urlsplit(response.url).path + "answer/"
        feedback = browser.request(
            "POST",
            path,
            data={
                "csrfmiddlewaretoken": browser.csrf(),
                "question": found.group(1),
                "option": option.group(1),
            },
        )
        assert feedback.status_code == 302, (feedback.status_code, feedback.text[:300])
        answered += 1
        page = browser.follow(feedback)
        attempt = re.search(r"/attempts/[0-9a-f-]+/", page.url)
        response = browser.follow(browser.request("GET", attempt.group(0))) if attempt else page
    return answered


def main() -> int:
    started = time.monotonic()
    version = subprocess.run(
        ["docker", "compose", "version", "--short"], text=True, capture_output=True
    )
    if version.returncode != 0:
        print("Compose v2 (`docker compose`) is needed: docs/operations.md.", file=sys.stderr)
        return 2
    build_dir = Path(tempfile.mkdtemp(prefix="gcquiz-smoke-"))
    prepare(build_dir)
    port = free_port()
    token = write_env(build_dir, port)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("COMPOSE_", "DOCKER_BUILDKIT"))
    }
    env["DOCKER_BUILDKIT"] = os.environ.get("DOCKER_BUILDKIT", "0")
    stack = Stack(build_dir, env)
    server = None
    try:
        stack.compose("build")
        record("build images", True, "gcquiz, gcquiz-labs-cpu, gcquiz-proxy", started)

        mark = time.monotonic()
        stack.compose("up", "-d")
        ok, detail = stack.wait_healthy()
        if not record("boot, every service healthy", ok, detail, mark):
            return finish(stack, 1)

        mark = time.monotonic()
        browser = Browser(port)
        probe = requests.get(f"http://127.0.0.1:{port}/readyz", timeout=10)  # Host: 127.0.0.1
        plain = requests.get(
            f"http://127.0.0.1:{port}/", headers={"Host": HOST}, allow_redirects=False, timeout=10
        )
        spoof = requests.get(
            f"http://127.0.0.1:{port}/",
            allow_redirects=False,
            timeout=10,
            headers={"Host": HOST, "X-Forwarded-Ssl": "on", "X-Forwarded-Protocol": "ssl"},
        )
        ok = (
            probe.status_code == 200
            and plain.status_code == 301
            and plain.headers.get("Location", "").startswith(f"https://{HOST}/")
            and spoof.status_code == 301
        )
        record(
            "probe by address; HTTPS redirect",
            ok,
            f"/readyz by IP {probe.status_code}; plain HTTP {plain.status_code} to "
            f"{plain.headers.get('Location', '')[:30]}; X-Forwarded-Ssl spoof {spoof.status_code}",
            mark,
        )

        mark = time.monotonic()
        server, platform = platform_for(stack)
        page = launch(browser, platform, "smoke-student-1", "smoke-quiz")
        placement_path = urlsplit(page.url).path
        ok = page.status_code == 200 and placement_path.startswith("/quiz/")
        record(
            "LTI launch (independent platform)", ok, f"{page.status_code} {placement_path}", mark
        )

        mark = time.monotonic()
        answered = answer_quiz(browser, placement_path)
        stored = stack.sql("SELECT count(*) FROM assessments_response")
        record(
            "quiz answers",
            answered >= 8 and stored == str(answered),
            f"{answered} answered through the proxy, {stored} stored",
            mark,
        )

        mark = time.monotonic()
        lab_page = launch(
            browser,
            platform,
            "smoke-student-1",
            "smoke-lab",
            {"activity": "lab:chain-under-budget"},
        )
        lab_path = urlsplit(lab_page.url).path
        submitted = browser.request(
            "POST", lab_path + "runs/", data={"csrfmiddlewaretoken": browser.csrf(), "kind": "sqrt"}
        )
        status = ""
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            status = stack.sql(LAST_RUN)
            if status.startswith(("succeeded", "rejected", "infrastructure_failed")):
                break
            time.sleep(3)
        record(
            "lab run on the CPU lab worker",
            submitted.status_code == 302 and status.startswith("succeeded on cpu"),
            f"{lab_path}: {status}",
            mark,
        )

        mark = time.monotonic()
        before = scrape(browser, token)
        stack.compose("up", "-d")  # a deploy: migrate runs again, running containers stay
        ok, detail = stack.wait_healthy()
        after = scrape(browser, token)
        kept = (
            after["answers"] == before["answers"]
            and after["requests"] > before["requests"]
            and after["tasks"] >= before["tasks"]
            and after["lab_runs"] == before["lab_runs"] >= 1
        )
        record(
            "/metrics across `docker compose up`",
            ok and kept,
            f"requests {before['requests']:.0f} -> {after['requests']:.0f}, answers "
            f"{before['answers']:.0f} -> {after['answers']:.0f}, tasks {before['tasks']:.0f} -> "
            f"{after['tasks']:.0f}, lab runs {after['lab_runs']:.0f}",
            mark,
        )

        mark = time.monotonic()
        stack.compose("up", "-d", "--scale", "web=2")
        ok, detail = stack.wait_healthy()
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        codes = {browser.request("GET", "/healthz").status_code for _ in range(20)}
        logs = stack.compose(
            "logs", "--no-log-prefix", "--since", since, "proxy", capture=True
        ).stdout
        upstreams = set()
        for line in logs.splitlines():
            try:  # compose may put a terminal control sequence before each line
                upstreams.add(json.loads(line[line.find("{") :]).get("upstream"))
            except ValueError:
                continue
        upstreams.discard(None)
        webs = [c for c in stack.containers() if c["Service"] == "web"]
        record(
            "scale web to 2",
            ok and codes == {200} and len(webs) == 2 and len(upstreams) >= 2,
            f"{len(webs)} replicas healthy, proxy used {len(upstreams)} of them",
            mark,
        )

        mark = time.monotonic()
        counted = scrape(browser, token)
        stack.compose("down")
        stack.compose("up", "-d", "--scale", "web=2")
        ok, detail = stack.wait_healthy()
        responses = stack.sql("SELECT count(*) FROM assessments_response")
        runs = stack.sql("SELECT count(*) FROM labs_labrun WHERE status = 'succeeded'")
        again = launch(browser, platform, "smoke-student-1", "smoke-quiz")
        restored = scrape(browser, token)
        survived = (
            responses == str(answered)
            and runs == "1"
            and again.status_code == 200
            and restored["answers"] == counted["answers"]
            and restored["requests"] >= counted["requests"]
        )
        record(
            "down, up: data and counters survive",
            ok and survived,
            f"{responses} answers, {runs} lab run, relaunch {again.status_code}, answers counter "
            f"{counted['answers']:.0f} -> {restored['answers']:.0f}",
            mark,
        )
        return finish(stack, 0 if all(row.ok for row in ROWS) else 1)
    except Exception as error:  # the table says how far it got
        record("(stopped)", False, f"{type(error).__name__}: {str(error)[:200]}", started)
        return finish(stack, 1)
    finally:
        if server is not None:
            server.stop()


def finish(stack: Stack, code: int) -> int:
    if code:
        stack.compose("ps", "-a", check=False)
        stack.compose("logs", "--tail", "30", check=False)
    if os.environ.get("SMOKE_KEEP") != "1":
        stack.compose("down", "-v", "--remove-orphans", check=False)
    print()
    print(table())
    return code


if __name__ == "__main__":
    sys.exit(main())
