"""What the stories stand on: the run's settings, the steps' record and table, the tool's
processes, Moodle's CLI helper, and browser sessions of Moodle users."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen

from playwright.sync_api import BrowserContext, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


class StepFailed(Exception):
    """A step's check did not hold; the message is the reason shown in the table."""


class Skipped(Exception):
    """A step could not run because what it needs is missing."""


class NotNeeded(Exception):
    """A fallback row whose step passed: nothing to do, and no failure."""


@dataclass
class Settings:
    moodle_src: Path
    run_dir: Path
    moodle_url: str
    tool_port: int  # production's proxy (docker/proxy/nginx.conf) in front of the web
    tool_backend_port: int  # the web process behind it
    tool_host: str  # the tool as Moodle's own site sees it (same site: 127.0.0.1)
    cross_host: str  # the tool on another site (step 6): localhost, over HTTPS
    tls_port: int  # nginx's TLS in front of the tool's second web process
    tls_backend_port: int
    tool_database_url: str
    redis_url: str
    password: str
    keep_running: bool
    registration_key: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    @classmethod
    def from_environment(cls) -> Settings:
        env = os.environ
        run_dir = Path(env.get("ACCEPTANCE_DIR", REPO / "var" / "acceptance")).resolve()
        if not env.get("MOODLE_SRC"):
            sys.exit("Set MOODLE_SRC to a Moodle 5.1 source tree (docs/acceptance-moodle.md).")
        return cls(
            moodle_src=Path(env["MOODLE_SRC"]).resolve(),
            run_dir=run_dir,
            moodle_url="http://{}:{}".format(
                env.get("MOODLE_HOST", "127.0.0.1"), env.get("MOODLE_PORT", "8180")
            ),
            tool_port=int(env.get("TOOL_PORT", "8107")),
            tool_backend_port=int(env.get("TOOL_BACKEND_PORT", "8109")),
            tool_host=env.get("TOOL_HOST", "127.0.0.1"),
            cross_host=env.get("TOOL_CROSS_SITE_HOST", "localhost"),
            tls_port=int(env.get("TOOL_TLS_PORT", "8443")),
            tls_backend_port=int(env.get("TOOL_TLS_BACKEND_PORT", "8108")),
            tool_database_url=env.get(
                "TOOL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gcquiz_acceptance"
            ),
            redis_url=env.get("TOOL_REDIS_URL", ""),
            password=env.get("MOODLE_PASSWORD", "Acceptance-1"),
            keep_running=env.get("KEEP_RUNNING", "0") == "1",
        )

    @property
    def tool_url(self) -> str:
        return f"http://{self.tool_host}:{self.tool_port}"

    @property
    def cross_tool_url(self) -> str:
        return f"https://{self.cross_host}:{self.tls_port}"

    def registration_url(self, base: str) -> str:
        return f"{base}/lti/register/?key={self.registration_key}"


# The record -------------------------------------------------------------------------------


@dataclass
class Step:
    key: str
    title: str
    status: str = "NOT RUN"
    seconds: float = 0.0
    detail: str = ""


class Record:
    """Every step with its result, time and reason; the table at the end."""

    def __init__(self, screens: Path) -> None:
        self.steps: list[Step] = []
        self.screens = screens
        screens.mkdir(parents=True, exist_ok=True)
        self.pages: list[Page] = []  # screenshots of these on a failure

    def run(self, key: str, title: str, action: Callable[[], str | None]) -> bool:
        step = Step(key, title)
        self.steps.append(step)
        print(f"\n=== {key} {title}", flush=True)
        started = time.monotonic()
        try:
            step.detail = action() or ""
            step.status = "PASS"
        except NotNeeded as reason:
            step.status, step.detail = "n/a", str(reason)
        except Skipped as reason:
            step.status, step.detail = "SKIP", str(reason)
        except StepFailed as reason:
            step.status, step.detail = "FAIL", str(reason)
        except PlaywrightTimeout as error:
            step.status = "FAIL"
            step.detail = "timed out: " + str(error).splitlines()[0]
        except Exception as error:  # the table must still come out
            step.status = "FAIL"
            step.detail = (
                f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            )
            traceback.print_exc()
        step.seconds = time.monotonic() - started
        step.detail = " ".join(step.detail.split())
        if step.status == "FAIL":
            self._screenshots(key)
        print(f"--- {key} {step.status} in {step.seconds:.1f} s: {step.detail}", flush=True)
        return step.status == "PASS"

    def _screenshots(self, key: str) -> None:
        for number, page in enumerate(self.pages):
            if page.is_closed():
                continue
            # A screenshot is a convenience, never the result.
            with contextlib.suppress(Exception):
                page.screenshot(path=str(self.screens / f"{key}-{number}.png"), full_page=True)

    @property
    def failed(self) -> bool:
        return any(step.status not in ("PASS", "n/a") for step in self.steps)

    def table(self) -> str:
        rows = [("step", "result", "seconds", "what happened")]
        rows += [
            (s.key + " " + s.title, s.status, f"{s.seconds:.1f}", s.detail) for s in self.steps
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = []
        for number, row in enumerate(rows):
            lines.append(
                " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + " | " + row[3]
            )
            if number == 0:
                lines.append("-+-".join("-" * w for w in widths) + "-+-" + "-" * 20)
        checks = [s for s in self.steps if s.status != "n/a"]
        passed = sum(s.status == "PASS" for s in checks)
        lines.append(f"{passed} of {len(checks)} steps passed")
        return "\n".join(lines)

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps([s.__dict__ for s in self.steps], indent=2, ensure_ascii=False))


# Moodle's side ---------------------------------------------------------------------------


class Moodle:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.url = settings.moodle_url
        site_file = settings.run_dir / "site.json"
        self.site = json.loads(site_file.read_text()) if site_file.exists() else {}

    @property
    def course_id(self) -> int:
        return self.site["course"]["id"]

    def ctl(self, *args: str) -> Any:
        """acceptance/php/tool_ctl.php: Moodle's own APIs, JSON out."""
        command = [
            "php",
            "-d",
            "max_input_vars=5000",
            str(HERE / "php" / "tool_ctl.php"),
            f"--moodle={self.settings.moodle_src}",
            *args,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise StepFailed(f"tool_ctl {' '.join(args)}: {done.stderr.strip() or done.stdout}")
        return json.loads(done.stdout)

    def types(self) -> list[dict]:
        return self.ctl("types")

    def activities(self) -> list[dict]:
        return self.ctl("activities", f"--course={self.course_id}")

    def grades(self) -> list[dict]:
        return self.ctl("grades", f"--course={self.course_id}")

    def login(self, context: BrowserContext, username: str) -> Page:
        """Signs in through Moodle's login form (retried: the click is flaky under load)."""
        page = context.new_page()
        page.set_default_timeout(30_000)
        for _ in range(3):
            page.goto(f"{self.url}/my/")
            if "/login/" not in page.url:
                return page  # signed in already (Moodle sends the signed-out to its login)
            # Moodle's script replaces the password field with a copy of its HTML once it
            # has rendered the show-password toggle (core/togglesensitive): a password typed
            # before that is lost, and the empty one reads "Invalid login".
            page.wait_for_function(LOGIN_FORM_READY)
            page.fill("#username", username)
            page.fill("#password", self.settings.password)
            try:
                with page.expect_navigation(timeout=30_000):
                    page.click("#loginbtn")
            except PlaywrightTimeout:
                continue
            if "/login/" not in page.url:
                return page
        error = page.locator(".alert-danger, #loginerrormessage")
        reason = error.first.inner_text() if error.count() else page.url
        raise StepFailed(f"{username} could not sign in to Moodle: {reason}")

    def user(self, username: str) -> dict:
        return self.site["users"][username]


# Moodle's page is ready as its Behat tests wait for it (the document complete, no pending
# JavaScript), and the login form's show-password toggle is in place when the page asks for one.
LOGIN_FORM_READY = """() => {
  if (document.readyState !== "complete") return false;
  const pending = typeof M === "object" && M.util && M.util.pending_js;
  if (pending && pending.length) return false;
  const toggled = [...document.scripts].some((s) => s.textContent.includes("core/togglesensitive"));
  return !toggled || document.querySelector(".toggle-sensitive-btn") !== null;
}"""


# The tool's processes --------------------------------------------------------------------


class Tool:
    """The tool from this checkout: its own database (dropped and created), gunicorn behind
    production's proxy (nginx) on loopback over HTTP (Moodle's own site), a second gunicorn
    behind nginx's TLS (the other site, secure cookies), a Celery worker, the GPU-queue
    worker (on the CPU here) and beat, each in a process group of its own."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.dir = settings.run_dir / "tool"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.python = str(REPO / ".venv" / "bin" / "python")
        self.bin = REPO / ".venv" / "bin"

    def environment(self) -> dict[str, str]:
        s = self.settings
        env = dict(os.environ)
        env.update(
            {
                # DEBUG off, as in production; cookies without Secure because this loopback
                # run is plain HTTP (SameSite=Lax then, the tool's own choice).
                "DEBUG": "0",
                "SECURE_COOKIES": "0",
                "SECRET_KEY": secrets.token_urlsafe(40),
                "ALLOWED_HOSTS": f"{s.tool_host},{s.cross_host},127.0.0.1,localhost,[::1]",
                "DATABASE_URL": s.tool_database_url,
                "REDIS_URL": s.redis_url,
                "CACHE_KEY_PREFIX": "gcquiz-acceptance",
                "GCQUIZ_VAR_DIR": str(self.dir / "var"),
                "LTI_REGISTRATION_KEY": s.registration_key,
                # Moodle is on loopback: the documented switch for an LMS on a private network.
                "LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES": "1",
                "LOG_FORMAT": "text",
                "LAB_TIMING_REPEATS": "1",
                "DEMO_MODE": "0",
                "WEB_CONCURRENCY": "2",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.pop("LTI_TOOL_URL", None)
        env.pop("LTI_FRAME_ANCESTORS", None)  # as the guide sets it up: nothing extra
        return env

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [self.python, "manage.py", *args],
            cwd=REPO,
            env=self.environment_cache,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise StepFailed(
                f"manage.py {' '.join(args)}: {(done.stderr or done.stdout).strip()[-400:]}"
            )
        return done.stdout

    def start(self) -> str:
        self.environment_cache = self.environment()
        self._reset_database()
        (self.dir / "var").mkdir(parents=True, exist_ok=True)
        self.manage("migrate", "--noinput")
        self.manage("load_quiz")
        self.manage("load_labs")
        port = self.settings.tool_port
        self._spawn(
            "web",
            [
                str(self.bin / "gunicorn"),
                "-c",
                "config/gunicorn.py",
                "-b",
                f"127.0.0.1:{self.settings.tool_backend_port}",
                "config.wsgi",
            ],
            # The address a rate limit counts is the one the proxy saw (docs/operations.md).
            {"TRUSTED_PROXY_COUNT": "1"},
        )
        self._spawn(
            "proxy",
            ["nginx", "-c", str(self._proxy_configuration()), "-g", "daemon off;"],
        )
        # The same tool behind nginx's TLS, for the other site: cookies Secure and
        # SameSite=None, the scheme taken from X-Forwarded-Proto.
        self._spawn(
            "web-tls",
            [
                str(self.bin / "gunicorn"),
                "-c",
                "config/gunicorn.py",
                "-b",
                f"127.0.0.1:{self.settings.tls_backend_port}",
                "config.wsgi",
            ],
            {"SECURE_COOKIES": "1", "BEHIND_HTTPS_PROXY": "1", "WEB_CONCURRENCY": "1"},
        )
        self._spawn(
            "worker",
            [
                str(self.bin / "celery"),
                "-A",
                "config",
                "worker",
                "--loglevel=INFO",
                "--concurrency=1",
                "-n",
                "acceptance-default@%h",
            ],
        )
        self._spawn(
            "gpu-worker",
            [
                str(self.bin / "celery"),
                "-A",
                "config",
                "worker",
                "-Q",
                "gpu",
                "--loglevel=INFO",
                "--concurrency=1",
                "-n",
                "acceptance-gpu@%h",
            ],
        )
        self._spawn(
            "beat",
            [
                str(self.bin / "celery"),
                "-A",
                "config",
                "beat",
                "--loglevel=INFO",
                "-s",
                str(self.dir / "var" / "celerybeat-schedule"),
            ],
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for name in self.processes:
                if self.processes[name].poll() is not None:
                    raise StepFailed(f"the tool's {name} exited; see {self.dir / (name + '.log')}")
            try:
                with urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
                    if answer.status == 200:
                        broker = (
                            "Redis " + self.settings.redis_url
                            if self.settings.redis_url
                            else "filesystem broker"
                        )
                        return (
                            f"production's proxy (nginx) on {port} in front of gunicorn on"
                            f" {self.settings.tool_backend_port}, and gunicorn on"
                            f" {self.settings.tls_backend_port} (behind TLS on"
                            f" {self.settings.tls_port}), DEBUG=0; worker, gpu-worker, beat;"
                            f" {broker}"
                        )
            except (URLError, OSError):
                pass
            time.sleep(1)
        raise StepFailed(f"the tool did not become ready on {port}; see {self.dir / 'web.log'}")

    processes: dict[str, subprocess.Popen]

    def _proxy_configuration(self) -> Path:
        """Production's proxy as docker/proxy/nginx.conf writes it, with this machine's
        addresses: the tool answers Moodle and its browsers as it does in production."""
        text = (REPO / "docker" / "proxy" / "nginx.conf").read_text()
        for old, new in {
            "pid /run/nginx.pid;": f"pid {self.dir / 'var' / 'nginx.pid'};",
            "listen 8080 default_server;": (
                f"listen {self.settings.tool_host}:{self.settings.tool_port} default_server;"
            ),
            "http://web:8000": f"http://127.0.0.1:{self.settings.tool_backend_port}",
        }.items():
            if old not in text:
                raise StepFailed(f"docker/proxy/nginx.conf no longer says {old!r}")
            text = text.replace(old, new)
        path = self.dir / "proxy-nginx.conf"
        path.write_text(text)
        return path

    def _reset_database(self) -> None:
        url = self.settings.tool_database_url
        match = re.match(
            r"postgres(?:ql)?://(?P<user>[^@:/]+)(?::(?P<pw>[^@]*))?@(?P<host>[^:/]+)(?::(?P<port>\d+))?/(?P<name>\w+)$",
            url,
        )
        if not match:
            raise StepFailed(f"TOOL_DATABASE_URL must be postgres://user@host:port/name, not {url}")
        env = dict(os.environ, PGPASSWORD=match["pw"] or "")
        base = [
            "psql",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            match["host"],
            "-p",
            match["port"] or "5432",
            "-U",
            match["user"],
            "-d",
            "postgres",
            "-c",
        ]
        for sql in (
            f'DROP DATABASE IF EXISTS "{match["name"]}" WITH (FORCE)',
            f'CREATE DATABASE "{match["name"]}"',
        ):
            done = subprocess.run([*base, sql], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise StepFailed(f"{sql}: {done.stderr.strip()}")

    def _spawn(self, name: str, command: list[str], extra: dict[str, str] | None = None) -> None:
        if not hasattr(self, "processes"):
            self.processes = {}
        log = (self.dir / f"{name}.log").open("w")
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env={**self.environment_cache, **(extra or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        (self.dir / f"{name}.pid").write_text(str(process.pid))
        self.processes[name] = process

    def stop(self) -> None:
        for process in getattr(self, "processes", {}).values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for name, process in getattr(self, "processes", {}).items():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            (self.dir / f"{name}.pid").unlink(missing_ok=True)

    def log_tail(self, name: str, pattern: str, lines: int = 3) -> str:
        """The last lines of a process's log that match: a refusal's logged reason."""
        path = self.dir / f"{name}.log"
        if not path.exists():
            return ""
        found = [
            line.strip()
            for line in path.read_text(errors="replace").splitlines()
            if re.search(pattern, line)
        ]
        return " / ".join(found[-lines:])


@contextmanager
def timed() -> Iterator[Callable[[], float]]:
    started = time.monotonic()
    yield lambda: time.monotonic() - started
