"""`make acceptance-moodle`: a fresh Moodle 5.1 site, the tool from this checkout, and the
stories in headless Chromium; a table of every step with its result, time and reason.
Exits 1 when any step did not pass (the table is printed either way)."""

from __future__ import annotations

import os
import subprocess
import sys

from playwright.sync_api import sync_playwright

from .harness import HERE, Record, Settings, Skipped, StepFailed, Tool
from .stories import Stories, screens_dir

# (key, title, Stories method)
STEPS = [
    ("1", "admin registers the tool in Moodle's dialog and activates it", "step_register"),
    ("1+", "(not a check) registration outside the dialog", "step_register_fallback"),
    ("2", "teacher adds the quiz and a lab by deep linking", "step_deep_linking"),
    ("3a", "student takes the quiz embedded (lang=ru)", "step_quiz_embedded"),
    ("3b", "student takes the quiz in a new window", "step_quiz_new_window"),
    ("4", "student runs a lab (gpu-worker on the CPU)", "step_lab"),
    ("5", "Moodle's gradebook shows the grades", "step_gradebook"),
    ("6a", "HTTPS cross-site, 3p cookies blocked: registration", "step_cross_site_registration"),
    (
        "6+",
        "(not a check) cross-site registration outside the dialog",
        "step_cross_site_registration_fallback",
    ),
    ("6b", "HTTPS cross-site, 3p cookies blocked: deep linking", "step_cross_site_deep_linking"),
    ("6c", "HTTPS cross-site, 3p cookies blocked: embedded launch", "step_cross_site_launch"),
    ("7", "teacher refreshes the roster (NRPS) from the tool", "step_roster"),
]


def not_run() -> str:
    raise Skipped("the set-up failed")


def main() -> int:
    settings = Settings.from_environment()
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    record = Record(screens_dir(settings))
    tool = Tool(settings)
    env = dict(os.environ, ACCEPTANCE_DIR=str(settings.run_dir))

    def install_moodle() -> str:
        if os.environ.get("ACCEPTANCE_SKIP_INSTALL") == "1":
            # For work on the stories only: the site as it is (not fresh), php-fpm and nginx
            # started again.
            subprocess.run([str(HERE / "stop.sh"), "moodle"], env=env, check=True)
            subprocess.run(
                [
                    "php-fpm8.2",
                    "--allow-to-run-as-root",
                    "--fpm-config",
                    str(settings.run_dir / "php-fpm" / "php-fpm.conf"),
                ],
                check=True,
            )
            subprocess.run(
                [
                    "nginx",
                    "-c",
                    str(settings.run_dir / "nginx" / "nginx.conf"),
                    "-p",
                    str(settings.run_dir / "nginx"),
                ],
                check=True,
            )
            return "ACCEPTANCE_SKIP_INSTALL=1: the site as the last run left it (NOT fresh)"
        done = subprocess.run(
            [str(HERE / "setup_moodle.sh")],
            env=env,
            text=True,
        )
        if done.returncode != 0:
            raise StepFailed(
                f"acceptance/setup_moodle.sh exited {done.returncode} (its output is above)"
            )
        return f"fresh site at {settings.moodle_url} (database and data root reset)"

    try:
        ready = record.run("0a", "set-up: Moodle 5.1 installed and served", install_moodle)
        ready = ready and record.run("0b", "set-up: the tool started", tool.start)
        if ready:
            with sync_playwright() as playwright:
                stories = Stories(settings, record, playwright)
                stories.tool = tool
                try:
                    for key, title, name in STEPS:
                        record.run(key, title, getattr(stories, name))
                finally:
                    stories.close()
        else:
            for key, title, _ in STEPS:
                record.run(key, title, not_run)
    finally:
        if not settings.keep_running:
            tool.stop()
            subprocess.run(
                [str(HERE / "stop.sh"), "moodle"],
                env=dict(os.environ, ACCEPTANCE_DIR=str(settings.run_dir)),
            )
        record.write_json(settings.run_dir / "results.json")
        print("\n" + record.table())
        print(
            f"\nLogs: {settings.run_dir}/ (tool/*.log, nginx/, php-fpm/);"
            f" screenshots of failures: {record.screens}/"
        )
        if settings.keep_running:
            print(
                "KEEP_RUNNING=1: Moodle and the tool are still up;"
                " `make acceptance-moodle-stop` stops them."
            )
    return 1 if record.failed else 0


if __name__ == "__main__":
    sys.exit(main())
