"""The stories, as Moodle's administrator, a teacher and students would live them, in
headless Chromium. Each returns what it saw (the table's detail) or raises StepFailed with
the reason. They never work round the tool: a refusal is a failure, with its reason."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Frame, FrameLocator, Page, Playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser import CHROMIUM, REAL_CHROMIUM_ARGS

from .harness import Moodle, NotNeeded, Record, Settings, Skipped, StepFailed, Tool

# Step 6: a browser that keeps no third-party cookies (Safari's default, Chrome's with the
# setting on): the profile's setting, and Chromium's switch for the same.
# The tool's other site is HTTPS with a throw-away CA (acceptance/setup_moodle.sh).
BLOCKING_ARGS = [
    *REAL_CHROMIUM_ARGS,
    "--test-third-party-cookie-phaseout",
    "--ignore-certificate-errors",
]
QUIZ_TITLE = "Checkpointing quiz (acceptance)"
LAB_TITLE = "Checkpointing lab (acceptance)"
CROSS_TITLE = "Checkpointing quiz, tool on another site (acceptance)"
GRADE_WAIT_SECONDS = 90
LAB_WAIT_SECONDS = 600


@dataclass
class State:
    """What one step leaves for the next."""

    type_id: int | None = None
    cross_type_id: int | None = None
    quiz_cmid: int | None = None
    lab_cmid: int | None = None
    cross_cmid: int | None = None
    picked_in_window: int = 0  # deep-linking choices made in the tool's own window
    quiz_scores: dict[str, float] = field(default_factory=dict)  # username -> score shown
    lab_scores: dict[str, float] = field(default_factory=dict)  # username -> percent shown
    finished_at: dict[tuple[str, str], float] = field(default_factory=dict)  # (title, user)


class Stories:
    def __init__(self, settings: Settings, record: Record, playwright: Playwright) -> None:
        self.settings = settings
        self.record = record
        self.moodle = Moodle(settings)
        self.tool: Tool | None = None
        self.state = State()
        self.playwright = playwright
        self.browser: Browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=REAL_CHROMIUM_ARGS
        )
        self.contexts: dict[str, BrowserContext] = {}

    # Browsers -------------------------------------------------------------------------------

    def context(self, username: str) -> BrowserContext:
        """One cookie jar per Moodle user (Moodle and the tool on one site here)."""
        if username not in self.contexts:
            lang = self.moodle.user(username)["lang"] if username != "admin" else "en"
            context = self.browser.new_context(locale="ru-RU" if lang == "ru" else "en-US")
            context.set_default_timeout(30_000)
            self.contexts[username] = context
        return self.contexts[username]

    def blocking_context(self, username: str) -> BrowserContext:
        """A browser that blocks third-party cookies (its own profile)."""
        key = "blocking:" + username
        if key not in self.contexts:
            profile = self.settings.run_dir / "profiles" / username
            (profile / "Default").mkdir(parents=True, exist_ok=True)
            (profile / "Default" / "Preferences").write_text(
                '{"profile": {"cookie_controls_mode": 1, "block_third_party_cookies": true}}'
            )
            context = self.playwright.chromium.launch_persistent_context(
                str(profile),
                executable_path=CHROMIUM,
                headless=True,
                args=BLOCKING_ARGS,
                locale="en-US",
            )
            context.set_default_timeout(30_000)
            self.contexts[key] = context
        return self.contexts[key]

    def login(self, context: BrowserContext, username: str) -> Page:
        page = self.moodle.login(context, username)
        self.record.pages.append(page)
        return page

    def close(self) -> None:
        for context in self.contexts.values():
            with contextlib.suppress(Exception):
                context.close()
        self.browser.close()

    # Step 1: dynamic registration in Moodle's dialog ---------------------------------------

    def register_in_dialog(self, base: str, context: BrowserContext) -> tuple[Page, str]:
        """Manage tools → tool URL → Add LTI Advantage → Register in the dialog. Returns the
        admin's page and what the dialog showed; raises StepFailed when it did not register."""
        page = self.login(context, "admin")
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        answers: list[str] = []
        page.on(
            "response",
            lambda r: (
                answers.append(f"{r.status} {r.headers.get('content-security-policy', '')}")
                if "/lti/register/" in r.url
                else None
            ),
        )
        page.goto(f"{self.moodle.url}/mod/lti/toolconfigure.php")
        page.fill("#tool-url", self.settings.registration_url(base))
        page.click("#tool-create-button")
        dialog = page.frame_locator("#external-registration-template-container iframe")
        register = dialog.locator("form button[type=submit].primary")
        try:
            register.wait_for(state="visible", timeout=20_000)
        except PlaywrightTimeout:
            blocked = [m for m in console if "frame" in m.lower() or "refused" in m.lower()]
            raise StepFailed(
                "the registration page did not show in Moodle's dialog: "
                + (blocked[0] if blocked else f"tool answered {answers or 'nothing'}")
            ) from None
        register.click()
        frame = self._frame(page, base)
        try:
            page.wait_for_function(
                "() => document.querySelector('#external-registration-page-container') === null"
                " || document.querySelector('#external-registration-container')"
                ".classList.contains('hidden')",
                timeout=30_000,
            )
        except PlaywrightTimeout:
            shown = _frame_text(frame) if frame else "nothing"
            raise StepFailed(
                f"the dialog did not close after Register; it shows: {shown}"
            ) from None
        return page, "registered in the dialog"

    def _frame(self, page: Page, base: str) -> Frame | None:
        for frame in page.frames:
            if frame.url.startswith(base):
                return frame
        return None

    def register_outside_dialog(self, base: str, context: BrowserContext) -> Page:
        """Not a story: when the dialog failed, the same registration (Moodle's own start
        page, with its token) opened in a tab of its own, so the later steps can still run."""
        page = self.login(context, "admin")
        page.goto(f"{self.moodle.url}/mod/lti/toolconfigure.php")
        sesskey = page.evaluate("() => M.cfg.sesskey")
        from urllib.parse import urlencode

        page.goto(
            f"{self.moodle.url}/mod/lti/startltiadvregistration.php?"
            + urlencode({"url": self.settings.registration_url(base), "sesskey": sesskey})
        )
        page.locator("form button[type=submit].primary").click()
        heading = page.locator("h1").first.inner_text()
        if "registered" not in heading.lower() and "зарегистр" not in heading.lower():
            raise StepFailed(f"the registration page answered: {_page_text(page)}")
        return page

    def activate(self, page: Page, base: str) -> int:
        """The new tool's card in Manage tools: Activate when it is pending."""
        types = [
            t
            for t in self.moodle.types()
            if base in (t["baseurl"] or "") or base in (t["initiatelogin"] or "")
        ]
        if not types:
            raise StepFailed(f"Moodle has no tool type for {base} after the registration")
        tool_type = types[-1]
        if tool_type["state"] != 1:
            page.goto(f"{self.moodle.url}/mod/lti/toolconfigure.php")
            card = page.locator(f".tool-card[data-type-id='{tool_type['id']}']")
            card.locator("a.activate").click()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                tool_type = next(t for t in self.moodle.types() if t["id"] == tool_type["id"])
                if tool_type["state"] == 1:
                    break
                time.sleep(0.5)
            else:
                raise StepFailed(f"tool type {tool_type['id']} is still pending after Activate")
        return tool_type["id"]

    def _register(self, context: BrowserContext, base: str, *, in_dialog: bool) -> tuple[int, str]:
        if in_dialog:
            page, seen = self.register_in_dialog(base, context)
        else:
            page, seen = (
                self.register_outside_dialog(base, context),
                "registered in a tab of its own",
            )
        type_id = self.activate(page, base)
        return type_id, self._describe_type(type_id, seen)

    def step_register(self) -> str:
        self.state.type_id, seen = self._register(
            self.context("admin"), self.settings.tool_url, in_dialog=True
        )
        return seen

    def step_register_fallback(self) -> str:
        if self.state.type_id:
            raise NotNeeded("not needed: the dialog registered the tool")
        self.state.type_id, seen = self._register(
            self.context("admin"), self.settings.tool_url, in_dialog=False
        )
        return "for the later steps only: " + seen

    def _describe_type(self, type_id: int, seen: str) -> str:
        t = next(t for t in self.moodle.types() if t["id"] == type_id)
        return (
            f"{seen}; Moodle tool type {type_id} '{t['name']}' active, client id {t['clientid']},"
            f" deep linking {'on' if t['contentitem'] else 'off'},"
            f" AGS {t['ags']}, NRPS {t['nrps']},"
            f" launch container {t['launchcontainer']}"
        )

    # Step 2: deep linking from the activity form --------------------------------------------

    def add_by_deep_linking(self, page: Page, type_id: int, choice: str, title: str) -> dict:
        course = self.moodle.course_id
        page.goto(
            f"{self.moodle.url}/course/modedit.php?add=lti&typeid={type_id}&course={course}"
            "&section=0&return=0"
        )
        page.click("#id_selectcontent")
        frame = page.frame_locator("#contentitem-page-iframe")
        picker: FrameLocator | Page = frame
        try:
            frame.locator("select[name=activity], #open-in-window").first.wait_for(timeout=30_000)
        except PlaywrightTimeout:
            raise StepFailed(
                "the tool's picker did not open in Moodle's content selection dialog: "
                + _frame_locator_text(frame)
            ) from None
        if not frame.locator("select[name=activity]").count():
            # The tool could not keep its cookie in the dialog and offers a window of its own.
            with page.context.expect_page() as opened:
                frame.locator("#open-in-window").click()
            picker = opened.value
            self.record.pages.append(picker)
            _wait_for_tool(picker, "select[name=activity]", "the picker in a new window")
            self.state.picked_in_window += 1
        activity = picker.locator("select[name=activity]")
        values = activity.locator("option").evaluate_all("(options) => options.map((o) => o.value)")
        wanted = next((v for v in values if v.startswith(choice)), None)
        if wanted is None:
            raise StepFailed(f"the picker offers no {choice} activity (it offers {values})")
        activity.select_option(wanted)
        picker.locator("input[name=title]").fill(title)
        picker.locator("form button[type=submit].primary").click()
        try:
            page.wait_for_function(
                "(title) => document.querySelector('#id_name')?.value === title",
                arg=title,
                timeout=30_000,
            )
        except PlaywrightTimeout:
            raise StepFailed(
                "Moodle's form was not filled from the tool's answer: "
                + _frame_locator_text(picker)
            ) from None
        with page.expect_navigation():
            page.click("#id_submitbutton2")
        found = [a for a in self.moodle.activities() if a["name"] == title]
        if not found:
            raise StepFailed(f"no activity '{title}' in the course after saving the form")
        return found[-1]

    def step_deep_linking(self) -> str:
        if not self.state.type_id:
            raise Skipped("no registered tool (step 1)")
        page = self.login(self.context("teacher"), "teacher")
        quiz = self.add_by_deep_linking(page, self.state.type_id, "quiz:", QUIZ_TITLE)
        self.state.quiz_cmid = quiz["cmid"]
        lab = self.add_by_deep_linking(page, self.state.type_id, "lab:", LAB_TITLE)
        self.state.lab_cmid = lab["cmid"]
        problems = []
        if not quiz["gradeitem"] or quiz["gradeitem"]["grademax"] != 8:
            problems.append(f"quiz grade item {quiz['gradeitem']} (expected out of 8)")
        if not lab["gradeitem"] or lab["gradeitem"]["grademax"] != 100:
            problems.append(f"lab grade item {lab['gradeitem']} (expected out of 100)")
        if problems:
            raise StepFailed("; ".join(problems))
        return (
            f"quiz cm {quiz['cmid']} (grade item out of {quiz['gradeitem']['grademax']:g}), "
            f"lab cm {lab['cmid']} (out of {lab['gradeitem']['grademax']:g})"
        )

    # Step 3: the quiz, embedded and in a new window ------------------------------------------

    def take_quiz(
        self,
        tool: FrameLocator | Page,
        language: str,
        midway: Callable[[], None] | None = None,
    ) -> float:
        """Starts (or resumes) the quiz and answers every question with its first option,
        calling ``midway`` after the third; returns the score on the summary."""
        html_lang = tool.locator("html").get_attribute("lang")
        if html_lang != language:
            raise StepFailed(
                f"the quiz page is in '{html_lang}', the student's language is '{language}'"
            )
        tool.locator("form button[type=submit].primary").first.click()
        for answered in range(20):
            if answered == 3 and midway is not None:
                midway()
            score = tool.locator("#score")
            option = tool.locator("input[name=option]")
            tool.locator("#score, input[name=option]").first.wait_for()
            if score.count():
                break
            asked = tool.locator("input[name=question]").input_value()
            option.first.check()
            tool.locator("form.question button[type=submit]").click()
            # The feedback page, with the next question's form under it (or the results link).
            tool.locator(f"input[name=question][value='{asked}']").wait_for(state="detached")
            tool.locator("[data-feedback]").wait_for()
            if not tool.locator("[data-feedback] .explanation").inner_text().strip():
                raise StepFailed("a feedback page shows no explanation")
            results = tool.locator("[data-feedback] ~ a.button.primary")
            if results.count():
                results.click()
        text = tool.locator("#score").inner_text()
        numbers = re.findall(r"\d+(?:[.,]\d+)?", text)
        if len(numbers) < 2:
            raise StepFailed(f"the summary's score reads '{text}'")
        return float(numbers[0].replace(",", "."))

    def step_quiz_embedded(self) -> str:
        if not self.state.quiz_cmid:
            raise Skipped("no quiz activity (step 2)")
        page = self.login(self.context("student2"), "student2")
        view = f"{self.moodle.url}/mod/lti/view.php?id={self.state.quiz_cmid}"
        page.goto(view)
        tool = page.frame_locator("#contentframe")
        _wait_for_tool(tool, "form button[type=submit].primary", "the embedded quiz")
        score = self.take_quiz(tool, "ru", midway=lambda: self._open_again_midway(page, view))
        self.state.quiz_scores["student2"] = score
        self.state.finished_at[(QUIZ_TITLE, "student2")] = time.time()
        return (
            f"student2 (lang=ru) took the quiz in Moodle's iframe, in Russian: {score:g} of 8;"
            " opened again from the course after question 3, the launch answered with question 4"
        )

    def _open_again_midway(self, page: Page, view: str) -> None:
        """The student opens the activity again from the course: the launch answers with the
        question they were on (decision 60), in Moodle's iframe, which then shows its
        address."""
        launches: list[int] = []

        def seen(response) -> None:
            if response.url.startswith(self.settings.tool_url) and "/lti/launch/" in response.url:
                launches.append(response.status)

        page.on("response", seen)
        try:
            page.goto(view)
            tool = page.frame_locator("#contentframe")
            _wait_for_tool(tool, "input[name=option]", "the question after opening it again")
        finally:
            page.remove_listener("response", seen)
        progress = tool.locator("#progress").inner_text()
        if not re.search(r"\b4\b", progress) or launches[-1:] != [200]:
            raise StepFailed(
                f"opened again after question 3, the tool showed '{progress}'"
                f" (its launch answered {launches})"
            )
        _tool_frame(page, self.settings.tool_url).wait_for_function(
            "location.pathname.startsWith('/attempts/')"
        )

    def step_quiz_new_window(self) -> str:
        if not self.state.quiz_cmid or not self.state.type_id:
            raise Skipped("no quiz activity (step 2)")
        # The launch container of a site tool is the administrator's setting (the teacher's
        # form hides it): "New window" for this story, back to "Embed, without blocks" after.
        self.moodle.ctl("container", f"--type={self.state.type_id}", "--value=window")
        try:
            context = self.context("student1")
            page = self.login(context, "student1")
            with context.expect_page(timeout=30_000) as opened:
                page.goto(f"{self.moodle.url}/mod/lti/view.php?id={self.state.quiz_cmid}")
            window = opened.value
            self.record.pages.append(window)
            window.set_default_timeout(30_000)
            _wait_for_tool(window, "form button[type=submit].primary", "the quiz in a new window")
            if not window.url.startswith(self.settings.tool_url):
                raise StepFailed(f"the new window is at {window.url}, not the tool")
            score = self.take_quiz(window, "en")
        finally:
            self.moodle.ctl("container", f"--type={self.state.type_id}", "--value=embed")
        self.state.quiz_scores["student1"] = score
        self.state.finished_at[(QUIZ_TITLE, "student1")] = time.time()
        return f"student1 took the quiz in the window Moodle opened: {score:g} of 8"

    # Step 4: a lab run ------------------------------------------------------------------------

    def step_lab(self) -> str:
        if not self.state.lab_cmid:
            raise Skipped("no lab activity (step 2)")
        page = self.login(self.context("student3"), "student3")
        page.goto(f"{self.moodle.url}/mod/lti/view.php?id={self.state.lab_cmid}")
        tool = page.frame_locator("#contentframe")
        _wait_for_tool(tool, "input[name=kind][value=sqrt]", "the embedded lab")
        tool.locator("input[name=kind][value=sqrt]").check()
        tool.locator("form.policy-form button[type=submit].primary").click()
        tool.locator("#run-status").wait_for()
        started = time.monotonic()
        try:
            tool.locator("#score").wait_for(timeout=LAB_WAIT_SECONDS * 1000)
        except PlaywrightTimeout:
            raise StepFailed(
                f"no result after {LAB_WAIT_SECONDS} s; the run shows: "
                + tool.locator("#run-status").inner_text()
            ) from None
        score_text = tool.locator("#score").inner_text()
        numbers = re.findall(r"\d+(?:[.,]\d+)?", score_text)
        if not numbers:
            raise StepFailed(f"the run's score reads '{score_text}'")
        self.state.lab_scores["student3"] = float(numbers[0].replace(",", "."))
        self.state.finished_at[(LAB_TITLE, "student3")] = time.time()
        return (
            f"student3 ran the √N policy on the gpu-worker (CPU): score {score_text.strip()},"
            f" result {time.monotonic() - started:.1f} s after the submission"
        )

    # Step 5: the gradebook ------------------------------------------------------------------

    def step_gradebook(self) -> str:
        # (activity, student, score the tool showed, how far Moodle may differ: the quiz
        # shows whole points of 8; the lab's page has cut its percent to one decimal (84.38
        # read 84.3) where Moodle keeps two)
        expected: list[tuple[str, str, float, float]] = [
            (QUIZ_TITLE, username, score, 0.001)
            for username, score in self.state.quiz_scores.items()
        ] + [(LAB_TITLE, username, score, 0.1) for username, score in self.state.lab_scores.items()]
        if not expected:
            raise Skipped("no quiz or lab was finished (steps 3 and 4)")
        deadline = time.monotonic() + GRADE_WAIT_SECONDS
        while True:
            found, missing = self._gradebook(expected)
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(1)
        if missing:
            sync = self.tool.log_tail("worker", r"(?i)gradesync|score|ags", 2) if self.tool else ""
            raise StepFailed(f"the gradebook lacks: {'; '.join(missing)}; worker log: {sync}")
        # What the teacher sees: the grader report has the students' rows.
        page = self.login(self.context("teacher"), "teacher")
        page.goto(f"{self.moodle.url}/grade/report/grader/index.php?id={self.moodle.course_id}")
        report = page.locator("table#user-grades")
        report.wait_for()
        text = report.inner_text()
        for _, username, _, _ in expected:
            if self.moodle.user(username)["fullname"] not in text:
                raise StepFailed(f"the teacher's grader report has no row for {username}")
        return "; ".join(found) + " (in the teacher's grader report too)"

    def _gradebook(self, expected: list[tuple[str, str, float, float]]) -> tuple[list, list]:
        items = {item["itemname"]: item for item in self.moodle.grades()}
        found, missing = [], []
        for title, username, score, tolerance in expected:
            grades = (items.get(title) or {}).get("grades", [])
            grade = next((g for g in grades if g["username"] == username), None)
            if grade is None or grade["finalgrade"] is None:
                missing.append(f"{username} in '{title}'")
            elif abs(grade["finalgrade"] - score) > tolerance:
                missing.append(
                    f"{username} in '{title}' is {grade['finalgrade']:g}, the tool showed {score:g}"
                )
            else:
                finished = self.state.finished_at.get((title, username), 0)
                delay = max(0, grade["timemodified"] - int(finished))
                found.append(
                    f"{username} {grade['finalgrade']:g}/{items[title]['grademax']:g} in '{title}'"
                    f" (in Moodle ≤{delay} s after the tool showed it)"
                )
        return found, missing

    # Step 6: the tool on another site, third-party cookies blocked --------------------------

    def step_cross_site_registration(self) -> str:
        self.state.cross_type_id, seen = self._register(
            self.blocking_context("admin"), self.settings.cross_tool_url, in_dialog=True
        )
        return seen + " (tool on another site, third-party cookies blocked)"

    def step_cross_site_registration_fallback(self) -> str:
        if self.state.cross_type_id:
            raise NotNeeded("not needed: the dialog registered the tool")
        self.state.cross_type_id, seen = self._register(
            self.blocking_context("admin"), self.settings.cross_tool_url, in_dialog=False
        )
        return "for the later steps only: " + seen

    def step_cross_site_deep_linking(self) -> str:
        if not self.state.cross_type_id:
            raise Skipped("no tool registered on the other site")
        page = self.login(self.blocking_context("teacher"), "teacher")
        windows = self.state.picked_in_window
        quiz = self.add_by_deep_linking(page, self.state.cross_type_id, "quiz:", CROSS_TITLE)
        self.state.cross_cmid = quiz["cmid"]
        where = (
            "picked in the tool's new window, the answer posted from Moodle's dialog"
            if self.state.picked_in_window > windows
            else "picked in Moodle's dialog"
        )
        if not quiz["gradeitem"] or quiz["gradeitem"]["grademax"] != 8:
            raise StepFailed(f"quiz grade item {quiz['gradeitem']} (expected out of 8); {where}")
        return (
            f"teacher added '{CROSS_TITLE}' (cm {quiz['cmid']}, grade item out of 8) by deep"
            f" linking with third-party cookies blocked: {where}"
        )

    def step_cross_site_launch(self) -> str:
        if not self.state.cross_type_id:
            raise Skipped("no tool registered on the other site")
        note = ""
        if not self.state.cross_cmid:
            # Not a story: deep linking failed, so the teacher's activity is made as a plain
            # link to the tool (Moodle's data generator) for the student's launch to be tried.
            made = self.moodle.ctl(
                "add-link",
                f"--type={self.state.cross_type_id}",
                f"--course={self.moodle.course_id}",
                f"--name={CROSS_TITLE}",
                f"--url={self.settings.cross_tool_url}/lti/launch/",
                "--grade=8",
            )
            self.state.cross_cmid = made["cmid"]
            note = " (activity made as a plain link, deep linking having failed)"
        context = self.blocking_context("student4")
        page = self.login(context, "student4")
        page.goto(f"{self.moodle.url}/mod/lti/view.php?id={self.state.cross_cmid}")
        tool = page.frame_locator("#contentframe")
        start = tool.locator("form button[type=submit].primary")
        new_window = tool.locator("#open-in-window")
        try:
            tool.locator("form button[type=submit].primary, #open-in-window").first.wait_for(
                timeout=30_000
            )
        except PlaywrightTimeout:
            refused = self.tool.log_tail("web", r"lti refused", 1) if self.tool else ""
            raise StepFailed(
                "the embedded launch shows neither the quiz nor a way to a new window: "
                + _frame_locator_text(tool)
                + (f" (tool log: {refused[refused.find('status=') :]})" if refused else "")
            ) from None
        storage = tool.locator("html").evaluate("() => document.hasStorageAccess()")
        if start.count():
            where = "embedded (the tool kept its cookie)"
            score = self.take_quiz(tool, "en")
        else:
            with context.expect_page() as opened:
                new_window.click()
            window = opened.value
            self.record.pages.append(window)
            window.set_default_timeout(30_000)
            _wait_for_tool(window, "form button[type=submit].primary", "the quiz in the new window")
            where = "through the tool's new-window page"
            score = self.take_quiz(window, "en")
        return (
            f"student4 took the quiz {where}: {score:g} of 8; the frame's storage access: "
            f"{storage}{note}"
        )

    # Step 7: the roster ---------------------------------------------------------------------

    def step_roster(self) -> str:
        if not self.state.quiz_cmid:
            raise Skipped("no quiz activity (step 2)")
        page = self.login(self.context("teacher"), "teacher")
        page.goto(f"{self.moodle.url}/mod/lti/view.php?id={self.state.quiz_cmid}")
        tool = page.frame_locator("#contentframe")
        _wait_for_tool(tool, "#not-attempted", "the teacher's dashboard")
        frame = _tool_frame(page, self.settings.tool_url)
        dashboard = frame.url
        before = tool.locator("#not-attempted").inner_text()
        tool.locator("a[href*='/manage/']").first.click()
        refresh = tool.locator("form[action*='/roster/'] button")
        try:
            refresh.wait_for(timeout=30_000)
        except PlaywrightTimeout:
            raise StepFailed(
                "the instructor's page offers no roster refresh (NRPS not granted?): "
                + _frame_locator_text(tool)
            ) from None
        # The refresh's POST answers with a redirect to this page: waited for, so that the
        # dashboard's address below is not loaded while that navigation is still under way
        # (the browser aborted the one or the other).
        with _tool_frame(page, self.settings.tool_url).expect_navigation():
            refresh.click()
        refresh.wait_for()
        # The refresh runs on the worker; the dashboard then counts every student of the
        # Moodle course who has not started (student5 never launched anything).
        students = [u for u, p in self.moodle.site["users"].items() if p["role"] == "student"]
        expected = len([u for u in students if u not in self.state.quiz_scores])
        deadline = time.monotonic() + 60
        seen = ""
        while time.monotonic() < deadline:
            frame = _tool_frame(page, self.settings.tool_url)
            frame.goto(dashboard)
            seen = " ".join(frame.locator("#not-attempted").inner_text().split())
            if re.match(rf"\D*{expected}\b", seen):
                return f"before: '{before}'; after the refresh: '{seen}'"
            time.sleep(2)
        raise StepFailed(
            f"expected {expected} students of the roster not started; the dashboard says "
            f"'{seen}' (before the refresh: '{before}')"
        )


def _tool_frame(page: Page, base: str) -> Frame:
    for frame in page.frames:
        if frame.url.startswith(base):
            return frame
    raise StepFailed(f"no frame of the tool ({base}) on {page.url}")


def _wait_for_tool(tool: FrameLocator | Page, selector: str, what: str) -> None:
    try:
        tool.locator(selector).first.wait_for(timeout=45_000)
    except PlaywrightTimeout:
        raise StepFailed(
            f"{what} did not show; the page says: {_frame_locator_text(tool)}"
        ) from None


def _frame_locator_text(tool: FrameLocator | Page) -> str:
    try:
        main = tool.locator("main")
        text = (main if main.count() else tool.locator("body")).inner_text(timeout=3_000)
    except Exception:
        return "(nothing readable: the frame is blocked or empty)"
    return " ".join(text.split())[:300] or "(an empty page)"


def _frame_text(frame: Frame) -> str:
    try:
        main = frame.locator("main")
        text = (main if main.count() else frame.locator("body")).inner_text(timeout=3_000)
        return " ".join(text.split())[:300]
    except Exception:
        return "(nothing readable)"


def _page_text(page: Page) -> str:
    return " ".join(page.locator("body").inner_text().split())[:300]


def screens_dir(settings: Settings) -> Path:
    return settings.run_dir / "screens"
