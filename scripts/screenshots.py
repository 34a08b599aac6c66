"""The README's screenshots, taken from the real pages of a fresh demo so they stay current:
`make screenshots` (or `python scripts/screenshots.py`). It builds the demo in a temporary
folder (SQLite, the demo class, the demo lab's runs measured on the CPU), serves it, and
drives Debian's Chromium through Playwright. PNGs go to docs/screenshots/."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
PHONE = {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "device_scale_factor": 1}
DESKTOP = {"viewport": {"width": 1100, "height": 800}, "device_scale_factor": 1}
SERVER_ENV = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SECRET_KEY")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def demo_site(var: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if k not in SERVER_ENV}
    env.update(GCQUIZ_VAR_DIR=var, DEBUG="1")
    manage = [sys.executable, "manage.py"]
    for args in (
        ["migrate", "--noinput"],
        ["load_quiz"],
        ["load_labs"],
        ["generate_demo_data", "--students", "160", "--seed", "1"],
    ):
        print("manage.py", *args, flush=True)
        subprocess.run(manage + args, cwd=ROOT, env=env, check=True, capture_output=True)
    port = free_port()
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=2)
            return server, url
        except OSError:
            time.sleep(0.5)
    server.terminate()
    raise SystemExit("the demo site did not start")


def save(page: Page, name: str, selector: str | None = None) -> None:
    path = OUT / f"{name}.png"
    target = page.locator(selector).first if selector else page
    target.screenshot(path=str(path), animations="disabled")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KiB", flush=True)


def student_on_a_phone(browser, url: str, language: str) -> None:
    context = browser.new_context(locale="ru-RU" if language == "ru" else "en-US", **PHONE)
    page = context.new_page()
    page.goto(url)
    if language == "en":
        save(page, "home-phone")
    page.locator("form[action$='/demo/launch/'] button.primary").first.click()
    page.locator("form[action$='/start/'] button").click()
    for position in range(1, 9):
        options = page.locator("form.question input[name=option]")
        options.first.wait_for()
        options.nth(position % options.count()).check()
        asked = page.locator("input[name=question]").input_value()
        page.locator("form.question button[type=submit]").click()
        page.locator(f"input[name=question][value='{asked}']").wait_for(state="detached")
        page.locator("[data-feedback]").wait_for()
        if position == 2:
            save(page, f"feedback-phone-{language}")
    page.locator("#score").wait_for()
    # The review as a student finds it again later: without the last answer's feedback on top.
    page.goto(page.url.split("?")[0])
    save(page, f"review-phone-{language}")
    context.close()


def instructor_on_a_desktop(browser, url: str) -> None:
    context = browser.new_context(locale="en-US", **DESKTOP)
    page = context.new_page()
    page.goto(url)
    page.get_by_role("button", name="Open the demo course as an instructor").click()
    page.locator("canvas[data-chart=scatter][data-drawn]").wait_for()
    save(page, "dashboard-statistics", "section[aria-labelledby=summary-heading]")
    save(page, "dashboard-scatter", "section[aria-labelledby=scatter-heading]")
    # A question with a flag, if the class has one (the demo's usually does).
    flagged = ".table-scroll:has([data-flag=beats-key], [data-flag=strong-students])"
    if not page.locator(flagged).count():
        flagged = "#distractors-heading + p + .table-scroll"
    save(page, "dashboard-distractors", flagged)
    page.goto(url)
    page.get_by_role("button", name="Open the lab as an instructor").click()
    page.locator("canvas[data-chart=runs][data-drawn]").wait_for()
    save(page, "lab-dashboard", "section[aria-labelledby=runs-heading]")
    context.close()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as var:
        server, url = demo_site(var)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox"]
                )
                student_on_a_phone(browser, url, "en")
                student_on_a_phone(browser, url, "ru")
                instructor_on_a_desktop(browser, url)
                browser.close()
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
