"""Headless Chromium (Debian's package) driven by Playwright, plus axe-core."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

CHROMIUM = "/usr/bin/chromium"
# The same patience for assertions as for actions (the pages set 10 s): on two cores shared
# with another test worker running a lab, Playwright's default of 5 s was once too short.
expect.set_options(timeout=10_000)
AXE_SCRIPT = Path(__file__).resolve().parents[1] / "node_modules" / "axe-core" / "axe.min.js"
# Chromium as people run it, headless (the acceptance suite against Moodle uses these).
REAL_CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The tests' Chromium keeps a page and its frames in one renderer process (decision 48). The
# LTI tests' tool frame goes from the tool's site to the platform's (its OIDC step) and back,
# so with site isolation it moves between processes three times, and Playwright sometimes
# lost it on the way: the frame stayed at the platform's address in Playwright's view while
# the tool served the landing to it, and the test timed out, or hung reading the frame. The
# origins, cookies, postMessage and CSP stay cross-site.
CHROMIUM_ARGS = [
    *REAL_CHROMIUM_ARGS,
    "--disable-site-isolation-trials",
    "--disable-features=IsolateOrigins,site-per-process",
]


def axe_violations(page: Page, impacts: tuple[str, ...] = ("serious", "critical")) -> list[dict]:
    """Run axe-core on the page; the violations of the given impacts, summarised."""
    # Evaluated through the DevTools protocol: a <script> tag with the source inline would be
    # refused by the pages' Content-Security-Policy (script-src 'self').
    page.evaluate(f"() => {{ {AXE_SCRIPT.read_text()}\n}}")
    result = page.evaluate("async () => await axe.run(document)")
    return [
        {
            "id": violation["id"],
            "impact": violation["impact"],
            "help": violation["help"],
            "targets": [node["target"] for node in violation["nodes"]],
        }
        for violation in result["violations"]
        if violation["impact"] in impacts
    ]


def tab_to(page: Page, selector: str, limit: int = 40) -> None:
    """Press Tab until the element matching the selector has focus, as a keyboard user."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{selector} cannot be reached with the Tab key")


def third_party_cookie_profile(user_data_dir: Path) -> Path:
    """A browser profile that keeps third-party cookies, as Chrome's default profile does
    (Playwright's own contexts are incognito-like and block them)."""
    (user_data_dir / "Default").mkdir(parents=True, exist_ok=True)
    (user_data_dir / "Default" / "Preferences").write_text(
        json.dumps({"profile": {"cookie_controls_mode": 0, "block_third_party_cookies": False}})
    )
    return user_data_dir
