"""The tool against Moodle's own quiz, side by side on one machine (`make bench-vs-moodle`).

    MOODLE_SRC=/work/moodle-src python -m bench.vs_moodle [--seconds 30]

Sets up what `make acceptance-moodle` sets up (acceptance/: a fresh Moodle 5.1 on nginx,
php-fpm and PostgreSQL; the tool on gunicorn, Celery, PostgreSQL and Redis, `DEBUG=0`), with
the tool registered in Moodle's dialog and its quiz placed by deep linking (the acceptance
stories 1 and 2, in headless Chromium), then, through Moodle's APIs
(acceptance/php/bench_quiz.php), Moodle's own quiz with the same eight questions, options
and explanations in "Immediate feedback" mode, and a class of students.

One asynchronous client (aiohttp, in this process) then plays both as students do, each
student with their own cookie jar, every form read from the page it is on:

* Moodle: the quiz's page and its start form (startattempt.php), the question page, the
  answer's POST (the question's Check button, processattempt.php), the feedback page it
  leads to, the next question by its link (`attempt.php?page=k`; cheaper than the Next page
  button's POST); after the eighth, the summary, "Submit all and finish" and the review;
* the tool: an LTI launch through Moodle (mod/lti/launch.php's form, the tool's OIDC login,
  Moodle's auth.php and its signed form, the tool's landing page), the start form, question
  1's page, then for each answer its POST, answered by the feedback page, which carries
  the next question's form (since 2026-12-02, decision 57; the POST redirected to the
  feedback page before, and until 2026-12-01 that page had a "Next question" link to the
  question's own page); the eighth answer is answered by the summary, which opens with its
  feedback (the tool finishes the attempt on its last answer; the loop followed "See your
  results" from the eighth feedback page before 2026-12-01), and its "Start another attempt",
  answered by question 1 since 2026-12-04 (decision 72; a redirect to it before; the loop
  went back to the activity's page for its start button before 2026-12-01).

Every feedback page is checked: the verdict agrees with the option chosen, and the question's
explanation is on it. One answer is the answer's POST, its feedback page and the next question
(three requests on Moodle; one on the tool, whose answer is answered by its feedback page,
which is the next question's, or after the last by the results); its
latency is those requests, and answers per second count the whole loop (starts and finishes
included). One student answers sequentially, then closed loops of 10
and 40 students (each sends their next request when the last one is answered). Before the
loops, student i answers i mod 8 questions on each side (untimed), so that the class is out
of step: students who all start question 1 at the same instant stay in step in a closed loop
and queue their attempts' finishes, results and starts together.

CPU per answer comes from /proc (utime + stime, with reaped children) of each side's
processes, sampled before and after each run of that side:
* Moodle: php-fpm (master and children), nginx (master and workers), the PostgreSQL backends
  connected to Moodle's database (persistent connections here, so they live through the run);
* the tool: every process of its gunicorn, Celery worker, GPU-queue worker and beat process
  groups, the PostgreSQL backends connected to its database, and redis-server (the whole
  server: on a shared machine this counts others' use of it against the tool).
PostgreSQL backends that ended during a run are in the postmaster's reaped-children figure
(every database's), counted to the side that was running: they are that side's backends
(a backend's whole life's CPU shows only when it ends; both sides keep theirs for the whole
run here, Moodle by ``dbpersist`` and the tool by ``DATABASE_CONN_MAX_AGE``, so little ends).
Moodle's php-fpm during the tool's runs (receiving the tool's grades over AGS) is printed
apart, in neither side's figure.
On a machine where other work opens connections, that counts it against the side running.
Before each side's run the harness waits for a quiet machine (a CHECKPOINT and a sync,
then a second under 10% busy; at most a minute): Moodle ran first at each size and its
PostgreSQL after-effects (the checkpoint's writes, autovacuum on its tables, billed through
the postmaster's reaped children) fell in the tool's run, as the tool's grades reaching
Moodle would fall in Moodle's next. Each side's line also prints the whole machine's CPU per
answer during its run (/proc/stat, the host's steal apart), and how long the wait was, how
busy the machine was and how much data waited to be written when it began.
Opening the activity is timed sequentially, one student: Moodle's quiz page to question 1,
against the launch through Moodle to question 1.

Prints the table of issue 21 with the ratios and the targets, met or not; docs/benchmarks.md
records a run. Stops what it started (set KEEP_RUNNING=1 to look around afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import html
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import yaml

from acceptance.harness import HERE, Record, Settings, StepFailed, Tool

ROOT = Path(__file__).resolve().parent.parent

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A backend's title: "postgres: [cluster: ]user database host(port) state".
POSTGRES_BACKEND = re.compile(r"postgres: (?:\S+: )?(?P<user>\S+) (?P<database>\S+) \S+\(")
CONTENT = ROOT / "assessments" / "content" / "gradient-checkpointing.yaml"
CLASS_SIZES = (1, 10, 40)
OPENINGS = 10  # sequential openings timed per side


# The questions, as both systems show them ---------------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    options: tuple[str, ...]
    correct: int
    explanation: str


def questions() -> list[Question]:
    content = yaml.safe_load(CONTENT.read_text())
    return [
        Question(
            text=item["text"]["en"],
            options=tuple(option["text"]["en"] for option in item["options"]),
            correct=next(i for i, option in enumerate(item["options"]) if option.get("correct")),
            explanation=item["explanation"]["en"],
        )
        for item in content["questions"]
    ]


def chosen_option(position: int, question: Question) -> int:
    """Right on even positions, the first wrong option on odd ones: both verdicts are seen."""
    if position % 2 == 0:
        return question.correct
    return next(i for i in range(len(question.options)) if i != question.correct)


# Pages --------------------------------------------------------------------------------------


@dataclass
class Form:
    action: str
    method: str
    id: str
    fields: list[tuple[str, str]] = field(default_factory=list)  # hidden and text inputs
    radios: dict[str, list[str]] = field(default_factory=dict)
    buttons: list[tuple[str, str]] = field(default_factory=list)


FORM = re.compile(r"<form\b.*?</form>", re.S | re.I)
LINK = re.compile(r'<a\b[^>]*\bhref="([^"]*)"', re.I)
CANONICAL = re.compile(r'<link rel="canonical" href="([^"]+)"')
ANSWER_FORM = re.compile(r'<form\b[^>]*action="[^"]*/answer/".*?</form>', re.S | re.I)


class PageParser(HTMLParser):
    """The forms of a page, with their fields."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self._form: Form | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._form = Form(a.get("action", ""), a.get("method", "get").lower(), a.get("id", ""))
            self.forms.append(self._form)
        elif self._form is not None and tag in ("input", "button") and a.get("name"):
            kind = a.get("type", "submit" if tag == "button" else "text").lower()
            if kind == "radio":
                self._form.radios.setdefault(a["name"], []).append(a.get("value", ""))
            elif kind == "submit":
                self._form.buttons.append((a["name"], a.get("value", "")))
            elif kind == "checkbox":
                if "checked" in a:
                    self._form.fields.append((a["name"], a.get("value", "on")))
            else:
                self._form.fields.append((a["name"], a.get("value", "")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None


@dataclass
class Page:
    url: str
    status: int
    text: str
    forms: list[Form]

    def form(self, *, action: str = "", id: str = "") -> Form:
        for form in self.forms:
            if action in form.action and (not id or form.id == id):
                return form
        raise StepFailed(f"no form {action or id} on {self.url} ({self.status}): {self.excerpt()}")

    def link(self, pattern: str) -> str:
        for href in LINK.findall(self.text):
            if re.search(pattern, href):
                return urljoin(self.url, html.unescape(href))
        raise StepFailed(f"no link {pattern} on {self.url}: {self.excerpt()}")

    @property
    def address(self) -> str:
        """The page's own address: the one it names (a page that answered a POST, such as a
        launch answered by its question, decision 60), else where it came from."""
        named = CANONICAL.search(self.text)
        return urljoin(self.url, html.unescape(named[1])) if named else self.url

    def plain(self) -> str:
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", self.text)).split())

    def excerpt(self) -> str:
        body = self.text.split("<body", 1)[-1]
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())[:300]


class Browser:
    """One student's client: a cookie jar of their own, redirects followed as a browser does."""

    def __init__(self, aiohttp) -> None:
        self.hops: list[tuple[str, float]] | None = None  # (address, seconds) while timed
        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(self._started)
        trace.on_request_redirect.append(self._answered)
        trace.on_request_end.append(self._answered)
        self.session = aiohttp.ClientSession(
            cookie_jar=aiohttp.CookieJar(unsafe=True),
            connector=aiohttp.TCPConnector(limit=4),
            trace_configs=[trace],
        )
        self._mark = 0.0

    async def _started(self, _session, _context, _params) -> None:
        self._mark = time.perf_counter()

    async def _answered(self, _session, _context, params) -> None:
        """Each response (a redirect's too) until its headers, with the address it came from:
        what the opening spends in Moodle's pages and in the tool's."""
        now = time.perf_counter()
        if self.hops is not None:
            self.hops.append((str(params.url), now - self._mark))
        self._mark = now

    async def get(self, url: str) -> Page:
        async with self.session.get(url) as response:
            return await self._page(response)

    async def submit(self, page: Page, form: Form, data: list[tuple[str, str]]) -> Page:
        url = urljoin(page.url, html.unescape(form.action)) if form.action else page.url
        if form.method == "get":
            async with self.session.get(url, params=data) as response:
                return await self._page(response)
        async with self.session.post(url, data=data) as response:
            return await self._page(response)

    async def _page(self, response) -> Page:
        text = await response.text()
        if response.status >= 400:
            raise StepFailed(f"{response.status} from {response.url}: {text[:300]}")
        parser = PageParser()
        # Only the forms go through the parser (Moodle's pages are large: parsing them whole
        # would take the client's CPU from the servers on this machine).
        parser.feed("".join(FORM.findall(text)))
        return Page(str(response.url), response.status, text, parser.forms)

    async def close(self) -> None:
        await self.session.close()


def check_feedback(page: Page, question: Question, correct: bool, verdict: str) -> None:
    """The feedback page says the verdict of the option chosen and shows the explanation."""
    if question.explanation[:80] not in page.plain():
        raise StepFailed(f"the feedback page {page.url} lacks the explanation: {page.excerpt()}")
    if verdict != ("correct" if correct else "wrong"):
        raise StepFailed(f"the feedback page {page.url} says {verdict}, expected correct={correct}")


# The two loops ------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of ``values`` lie (0 when there are none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


@dataclass
class Figures:
    answers: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    finishing: list[float] = field(default_factory=list)  # the answers that finish attempts
    others: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU ms per answer, by process kind
    # The tool's runs: Moodle's php-fpm meanwhile (receiving the tool's grades over AGS, on the
    # same two cores), per answer; apart from the tool's figure, as Moodle's work.
    lms_cpu_ms: float = 0.0
    # Every process's CPU on the machine during the run, per answer (/proc/stat): what the
    # sides' figures leave out shows as the difference (autovacuum, the checkpointer, others).
    machine_cpu_ms: float = 0.0
    # Before the run: seconds waited for a quiet machine, and how busy it was when that began.
    settled_s: float = 0.0
    busy_before: float = 0.0
    dirty_mb_before: float = 0.0  # the page cache's dirty data written out before the run
    steal_share: float = 0.0  # of the run's CPU time, taken by the hypervisor for others
    # The client's full garbage collections during the run, seconds each: each stops every
    # request in flight, on either side alike (110-190 ms each in bench.tool_loop's client).
    client_full_collections: list[float] = field(default_factory=list)
    first_error: str = ""

    @property
    def rate(self) -> float:
        return self.answers / self.seconds if self.seconds else 0.0

    def percentile(self, share: float, of: str = "latencies") -> float:
        """Milliseconds, of all answers' ``latencies``, the ``finishing`` ones or the ``others``."""
        return percentile(getattr(self, of), share) * 1000

    @property
    def cpu_per_answer(self) -> float:
        return sum(v for k, v in self.cpu_ms.items() if k != "client")


class MoodleStudent:
    def __init__(self, browser: Browser, base: str, cmid: int, username: str, password: str):
        self.browser, self.base, self.cmid = browser, base, cmid
        self.username, self.password = username, password
        self.page: Page | None = None  # the question page the student is on
        self.finished_attempt = False  # whether the last answer finished the attempt
        self.position = 0

    async def sign_in(self) -> None:
        page = await self.browser.get(f"{self.base}/login/index.php")
        form = page.form(id="login")
        data = [(k, v) for k, v in form.fields if k not in ("username", "password")]
        data += [("username", self.username), ("password", self.password)]
        page = await self.browser.submit(page, form, data)
        if "/login/" in page.url:
            raise StepFailed(f"{self.username} could not sign in to Moodle: {page.excerpt()}")

    async def open(self) -> None:
        """The quiz's page, its start (or continue) button, question 1 (or where they were)."""
        page = await self.browser.get(f"{self.base}/mod/quiz/view.php?id={self.cmid}")
        await self._start(page)

    async def _start(self, page: Page) -> None:
        form = page.form(action="startattempt.php")
        page = await self.browser.submit(page, form, form.fields)
        self._on_question(page)

    def _on_question(self, page: Page) -> None:
        if "/mod/quiz/attempt.php" not in page.url:
            raise StepFailed(f"expected a question page, got {page.url}: {page.excerpt()}")
        self.page = page
        self.position = int(re.search(r'name="thispage" value="(\d+)"', page.text)[1])

    async def answer(self, content: list[Question]) -> float:
        if self.page is None:
            await self.open()
        page, position = self.page, self.position
        question = content[position]
        if question.text not in page.plain():
            raise StepFailed(f"question {position + 1} is not on {page.url}")
        form = page.form(id="responseform")
        (radio,) = form.radios
        check = next(name for name, _ in form.buttons if name.endswith("_-submit"))
        choice = chosen_option(position, question)
        started = time.perf_counter()
        feedback = await self.browser.submit(
            page, form, [*form.fields, (radio, str(choice)), (check, "1")]
        )
        state = re.search(r'class="que multichoice immediatefeedback ([a-z]+)', feedback.text)
        verdict = {"correct": "correct", "incorrect": "wrong"}.get(state[1] if state else "", "?")
        check_feedback(feedback, question, choice == question.correct, verdict)
        last = position == len(content) - 1
        self.finished_attempt = last
        attempt = re.search(r"attempt=(\d+)", feedback.url)[1]
        if last:
            following = await self.browser.get(
                f"{self.base}/mod/quiz/summary.php?attempt={attempt}&cmid={self.cmid}"
            )
        else:
            following = await self.browser.get(
                f"{self.base}/mod/quiz/attempt.php?attempt={attempt}&cmid={self.cmid}"
                f"&page={position + 1}"
            )
        elapsed = time.perf_counter() - started
        if last:
            finish = following.form(action="processattempt.php")
            review = await self.browser.submit(following, finish, finish.fields)
            if "/mod/quiz/review.php" not in review.url:
                raise StepFailed(f"finishing led to {review.url}: {review.excerpt()}")
            await self.open()  # the quiz's page and its start button
        else:
            self._on_question(following)
        return elapsed


class ToolStudent:
    def __init__(self, browser: Browser, moodle: str, cmid: int):
        self.browser, self.moodle, self.cmid = browser, moodle, cmid
        self.page: Page | None = None
        self.finished_attempt = False  # whether the last answer finished the attempt

    async def launch(self) -> Page:
        """Moodle's launch of the activity, followed through its auto-submitted forms."""
        page = await self.browser.get(f"{self.moodle}/mod/lti/launch.php?id={self.cmid}")
        for _ in range(4):
            if page.url.startswith(self.moodle) and page.forms:
                form = page.forms[0]
                page = await self.browser.submit(page, form, form.fields)
            else:
                break
        if page.url.startswith(self.moodle):
            raise StepFailed(f"the launch stayed in Moodle at {page.url}: {page.excerpt()}")
        return page

    async def open(self) -> None:
        """The launch through Moodle to question 1 (or where the student was: a launch with
        an attempt in progress lands on its question, decision 54)."""
        page = await self.launch()
        if "/attempts/" in page.address:
            self._on_question(page)
        else:
            await self._start(page)

    async def _start(self, page: Page) -> None:
        form = page.form(action="/start/")
        page = await self.browser.submit(page, form, form.fields)
        self._on_question(page)

    def _on_question(self, page: Page) -> None:
        if "/attempts/" not in page.address or not ANSWER_FORM.search(page.text):
            raise StepFailed(f"expected a question's form, got {page.url}: {page.excerpt()}")
        self.page = page

    async def answer(self, content: list[Question]) -> float:
        if self.page is None:
            await self.open()
        page = self.page
        # The question is the one in the answer's form (a feedback page also shows the
        # question it answered).
        asked = ANSWER_FORM.search(page.text)[0]
        plain = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", asked)).split())
        position = next(i for i, q in enumerate(content) if q.text in plain)
        question = content[position]
        form = page.form(action="/answer/")
        labels = {
            html.unescape(text): value
            for value, text in re.findall(
                r'name="option" value="(\d+)"[^>]*> <span>(.*?)</span>', asked
            )
        }
        choice = chosen_option(position, question)
        started = time.perf_counter()
        feedback = await self.browser.submit(
            page, form, [*form.fields, ("option", labels[question.options[choice]])]
        )
        state = re.search(r'class="feedback is-(correct|wrong)"', feedback.text)
        check_feedback(feedback, question, choice == question.correct, state[1] if state else "?")
        elapsed = time.perf_counter() - started  # checked within, as on Moodle's side
        self.finished_attempt = position == len(content) - 1
        if position < len(content) - 1:
            self._on_question(feedback)  # the next question is under the feedback
            return elapsed
        # The last answer is answered by the results, opening with its feedback.
        if not re.search(r'id="score"', feedback.text):
            raise StepFailed(f"the last answer led to no score: {feedback.excerpt()}")
        # The summary's "Start another attempt" (Moodle's loop goes back to the quiz's page,
        # its review having no such button).
        await self._start(feedback)
        return elapsed


async def stagger(student, content: list[Question], number: int) -> None:
    for _ in range(number % len(content)):
        await student.answer(content)


async def closed_loop(students: list, content: list[Question], seconds: float) -> Figures:
    """Each student answers, then answers again, until the time is up."""
    figures = Figures()
    deadline = time.perf_counter() + seconds

    async def one(student) -> None:
        while time.perf_counter() < deadline:
            try:
                latency = await student.answer(content)
                figures.latencies.append(latency)
                (figures.finishing if student.finished_attempt else figures.others).append(latency)
                figures.answers += 1
            except Exception as error:  # counted and shown; the student starts over
                figures.errors += 1
                figures.first_error = figures.first_error or f"{type(error).__name__}: {error}"
                student.page = None

    began: list[float] = []

    def full_collection(phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                began.append(time.perf_counter())
            else:
                figures.client_full_collections.append(time.perf_counter() - began.pop())

    gc.collect()  # what the set-up left is collected now, not inside the run
    gc.callbacks.append(full_collection)
    try:
        started = time.perf_counter()
        await asyncio.gather(*(one(student) for student in students))
        figures.seconds = time.perf_counter() - started
    finally:
        gc.callbacks.remove(full_collection)
    return figures


# CPU from /proc -----------------------------------------------------------------------------


def _processes() -> list[tuple[int, int, int, str, str, float]]:
    """(pid, parent, process group, name, command line, CPU seconds with reaped children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        seconds = sum(int(ticks) for ticks in fields[11:15]) / CLOCK_TICKS
        found.append((int(entry.name), int(fields[1]), int(fields[2]), name, command, seconds))
    return found


class CpuMeter:
    """CPU seconds so far of each kind of process of either side (see the module's text)."""

    def __init__(self, settings: Settings, tool: Tool) -> None:
        self.moodle_db = _database_name_of_moodle()
        self.tool_db = settings.tool_database_url.rsplit("/", 1)[-1]
        self.nginx_pid = int((settings.run_dir / "nginx" / "nginx.pid").read_text())
        self.fpm_pid = int((settings.run_dir / "php-fpm" / "php-fpm.pid").read_text())
        self.tool_groups = {process.pid: name for name, process in tool.processes.items()}

    def sample(self) -> dict[str, float]:
        totals = dict.fromkeys(
            (
                "moodle php-fpm",
                "moodle nginx",
                "moodle postgres",
                *(f"tool {name}" for name in self.tool_groups.values()),
                "tool postgres",
                "tool redis",
                "postgres ended connections",
                "client",
            ),
            0.0,
        )
        for pid, parent, group, name, command, seconds in _processes():
            if pid == os.getpid():
                totals["client"] += seconds
            elif self.fpm_pid in (pid, parent):
                totals["moodle php-fpm"] += seconds
            elif self.nginx_pid in (pid, parent):
                totals["moodle nginx"] += seconds
            elif group in self.tool_groups:
                totals[f"tool {self.tool_groups[group]}"] += seconds
            elif name.startswith("redis-server"):
                totals["tool redis"] += seconds
            elif backend := POSTGRES_BACKEND.match(command):
                if backend["database"] == self.moodle_db:
                    totals["moodle postgres"] += seconds
                elif backend["database"] == self.tool_db:
                    totals["tool postgres"] += seconds
            elif name == "postgres" and command.startswith("/"):
                # The postmaster: its reaped children are every ended connection's CPU.
                totals["postgres ended connections"] += _reaped(pid)
        return totals


def _reaped(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(ticks) for ticks in fields[13:15]) / CLOCK_TICKS


def _database_name_of_moodle() -> str:
    return os.environ.get("MOODLE_DB_NAME", "moodle_acceptance")


def machine_cpu() -> tuple[float, float, float]:
    """(busy, all, stolen) CPU seconds of the whole machine so far, from /proc/stat; stolen
    is the time a virtual machine's CPUs waited for the host (others' load), not counted as
    busy."""
    ticks = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, stolen = ticks[3] + ticks[4], ticks[7]  # idle and iowait; steal
    every = sum(ticks[:8])
    return (every - idle - stolen) / CLOCK_TICKS, every / CLOCK_TICKS, stolen / CLOCK_TICKS


def dirty_mb() -> float:
    """The page cache's data not yet written to disk (/proc/meminfo), MB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Dirty:"):
            return int(line.split()[1]) / 1024
    return 0.0


QUIET_SHARE = 0.10  # of all CPUs, over a second: the machine counts as quiet
SETTLE_LIMIT_S = 60.0


async def settle(settings: Settings) -> tuple[float, float, float]:
    """Wait for the machine to be quiet before a side's run: PostgreSQL's checkpoint and
    autovacuum after one side's writes, the disk writing out its files (Moodle's sessions
    and caches are files), and the grades of the tool's run reaching Moodle would otherwise
    run during the other side's run (Moodle ran first at each size; its after-effects fell
    in the tool's runs). A CHECKPOINT and a sync, then a wait until the machine is under
    QUIET_SHARE busy for a second (at most SETTLE_LIMIT_S). Returns (seconds waited, the
    machine's busy share in the first second, MB that were waiting to be written)."""
    started = time.perf_counter()
    dirty = dirty_mb()
    try:
        done = subprocess.run(
            ["psql", "-q", "-d", settings.tool_database_url, "-c", "CHECKPOINT"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        failed = done.stderr.strip() if done.returncode else ""
    except subprocess.TimeoutExpired:
        failed = "no answer in 120 s"
    if failed:  # a role that may not checkpoint: said, and the wait goes on without it
        print(f"CHECKPOINT before the run failed: {failed}", flush=True)
    await asyncio.to_thread(os.sync)
    first = None
    while first is None or time.perf_counter() - started < SETTLE_LIMIT_S:
        busy, total, _stolen = machine_cpu()
        await asyncio.sleep(1.0)
        busy_after, total_after, _stolen = machine_cpu()
        share = (busy_after - busy) / max(1e-9, total_after - total)
        first = share if first is None else first
        if share < QUIET_SHARE:
            break
    return time.perf_counter() - started, first or 0.0, dirty


async def measured(meter: CpuMeter, side: str, run, settings: Settings) -> Figures:
    figures_before = await settle(settings)
    before = meter.sample()
    machine_before = machine_cpu()
    figures = await run
    machine_after = machine_cpu()
    after = meter.sample()
    count = max(1, figures.answers)
    figures.settled_s, figures.busy_before, figures.dirty_mb_before = figures_before
    busy, every, stolen = (b - a for a, b in zip(machine_before, machine_after, strict=True))
    figures.machine_cpu_ms = busy * 1000 / count
    figures.steal_share = stolen / every if every else 0.0
    for kind in before:
        if kind.startswith(side) or kind in ("client", "postgres ended connections"):
            figures.cpu_ms[kind] = (after[kind] - before[kind]) * 1000 / count
    if side == "tool":
        spent = after["moodle php-fpm"] - before["moodle php-fpm"]
        figures.lms_cpu_ms = spent * 1000 / count
    return figures


# Set-up -------------------------------------------------------------------------------------


class BenchTool(Tool):
    """The acceptance tool with the web workers of the issue's measurement."""

    web_workers = 4

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["WEB_CONCURRENCY"] = str(self.web_workers)
        # Connections kept for the whole run, as Moodle's are (dbpersist): each backend's CPU
        # then shows in the run it was spent in, not in the one where its connection ended.
        env["DATABASE_CONN_MAX_AGE"] = "3600"
        return env


def set_up(settings: Settings, record: Record, tool: Tool, students: int) -> dict:
    """Moodle and the tool, the tool registered and placed (the acceptance stories 1 and 2),
    Moodle's own quiz and the class; returns what the loops need."""
    from playwright.sync_api import sync_playwright

    from acceptance.stories import Stories

    env = dict(os.environ, ACCEPTANCE_DIR=str(settings.run_dir))
    env.setdefault("FPM_CHILDREN", "5")
    env["MOODLE_DB_PERSIST"] = "1"

    def install() -> str:
        done = subprocess.run([str(HERE / "setup_moodle.sh")], env=env, text=True)
        if done.returncode != 0:
            raise StepFailed(f"acceptance/setup_moodle.sh exited {done.returncode}")
        return f"fresh site at {settings.moodle_url}, php-fpm {env['FPM_CHILDREN']} children"

    found: dict = {}

    def moodle_quiz() -> str:
        site = json.loads((settings.run_dir / "site.json").read_text())
        spec = settings.run_dir / "bench-questions.json"
        spec.write_text(
            json.dumps(
                [
                    {
                        "name": f"Q{number}",
                        "text": q.text,
                        "options": list(q.options),
                        "correct": q.correct,
                        "explanation": q.explanation,
                    }
                    for number, q in enumerate(questions(), start=1)
                ]
            )
        )
        out = settings.run_dir / "bench-quiz.json"
        command = [
            "php",
            "-d",
            "max_input_vars=5000",
            str(HERE / "php" / "bench_quiz.php"),
            f"--moodle={settings.moodle_src}",
            f"--course={site['course']['id']}",
            f"--questions={spec}",
            f"--students={students}",
            f"--password={settings.password}",
            f"--out={out}",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise StepFailed(f"bench_quiz.php: {done.stderr.strip() or done.stdout.strip()}")
        found.update(json.loads(out.read_text()))
        quiz = found["quiz"]
        if quiz["slots"] != 8 or quiz["sumgrades"] != 8:
            raise StepFailed(f"Moodle's quiz has {quiz['slots']} slots, {quiz['sumgrades']} marks")
        return f"quiz cm {quiz['cmid']} (8 questions, immediate feedback), {students} students"

    ok = record.run("0a", "Moodle 5.1 installed and served", install)
    ok = ok and record.run("0b", "the tool started (4 web workers)", tool.start)
    ok = ok and record.run("0c", "Moodle's own quiz and the class", moodle_quiz)
    if ok:
        with sync_playwright() as playwright:
            stories = Stories(settings, record, playwright)
            stories.tool = tool
            try:
                ok = record.run("1", "the tool registered in Moodle", stories.step_register)
                ok = ok and record.run(
                    "2", "the tool's quiz placed by deep linking", stories.step_deep_linking
                )
                found["tool_cmid"] = stories.state.quiz_cmid
            finally:
                stories.close()  # the browser takes no CPU from the runs
    if not ok:
        raise SystemExit("set-up failed:\n" + record.table())
    return found


# The run ------------------------------------------------------------------------------------


async def run(settings: Settings, tool: Tool, found: dict, seconds: float) -> dict:
    import aiohttp

    content = questions()
    moodle_url = settings.moodle_url
    meter = CpuMeter(settings, tool)
    usernames = found["students"]
    browsers = [Browser(aiohttp) for _ in usernames]
    moodle = [
        MoodleStudent(b, moodle_url, found["quiz"]["cmid"], name, settings.password)
        for b, name in zip(browsers, usernames, strict=True)
    ]
    ours = [ToolStudent(b, moodle_url, found["tool_cmid"]) for b in browsers]
    results: dict = {"phases": {}}
    try:
        # Every student signs in to Moodle once (the same cookie jar serves both systems).
        for chunk in range(0, len(moodle), 8):
            await asyncio.gather(*(s.sign_in() for s in moodle[chunk : chunk + 8]))
        # Opening the activity, sequentially, by the first student (after one of each to warm).
        openings: dict[str, list[float]] = {"moodle": [], "tool": [], "tool in Moodle": []}
        for number in range(OPENINGS + 1):
            for side, student in (("moodle", moodle[0]), ("tool", ours[0])):
                student.browser.hops = []
                started = time.perf_counter()
                await student.open()
                if number:
                    openings[side].append(time.perf_counter() - started)
                    if side == "tool":
                        openings["tool in Moodle"].append(
                            sum(s for url, s in student.browser.hops if url.startswith(moodle_url))
                        )
                        for url, took in student.browser.hops:
                            if not url.startswith(moodle_url):
                                openings.setdefault(_step(url), []).append(took)
                student.browser.hops = None
        results["opening_ms"] = {k: statistics.median(v) * 1000 for k, v in openings.items()}
        results["opening_ms"]["a trivial request"] = await trivial_after_moodle(
            moodle[0], f"{settings.tool_url}/healthz"
        )
        # Each other student opens both once (the tool's session comes from this launch).
        for chunk in range(0, len(moodle), 8):
            await asyncio.gather(*(s.open() for s in moodle[chunk : chunk + 8]))
            await asyncio.gather(*(s.open() for s in ours[chunk : chunk + 8]))
        # Students out of step: student i answers i mod 8 questions first, on both sides.
        # Students who all start question 1 at once stay in step in a closed loop (the
        # queue serves them in turn), so their finishes, results pages and starts queue
        # together: an artefact of starting the clock, not a class at work.
        for chunk in range(0, len(moodle), 8):
            for side in (moodle, ours):
                await asyncio.gather(
                    *(stagger(s, content, number) for number, s in
                      enumerate(side[chunk : chunk + 8], start=chunk))
                )  # fmt: skip
        await closed_loop(moodle[:4], content, 5)  # warm-up of both
        await closed_loop(ours[:4], content, 5)
        for size in CLASS_SIZES:
            moodle_figures = await measured(
                meter, "moodle", closed_loop(moodle[:size], content, seconds), settings
            )
            tool_figures = await measured(
                meter, "tool", closed_loop(ours[:size], content, seconds), settings
            )
            results["phases"][size] = {"moodle": moodle_figures, "tool": tool_figures}
            print(
                f"{size} students: Moodle {moodle_figures.answers} answers"
                f" ({moodle_figures.errors} errors), tool {tool_figures.answers}"
                f" ({tool_figures.errors} errors)",
                flush=True,
            )
    finally:
        await asyncio.gather(*(b.close() for b in browsers))
    return results


async def trivial_after_moodle(student: MoodleStudent, url: str) -> float:
    """Median ms of a trivial request to the tool (its health check) right after Moodle's
    opening, as the tool's responses in an opening come after Moodle's pages: what each of
    them costs on this machine whatever it does (the processes on its way have slept)."""
    took = []
    for _ in range(OPENINGS):
        await student.open()
        started = time.perf_counter()
        async with student.browser.session.get(url) as response:
            await response.read()
            if response.status != 200:
                raise StepFailed(f"{response.status} from {url}")
        took.append(time.perf_counter() - started)
    return statistics.median(took) * 1000


def address_kind(path: str) -> str:
    """A tool address with its ids left out (``/attempts/…/summary/``): one name per kind."""
    return re.sub(r"/[0-9a-f-]{32,36}/|/\d+/", "/…/", path)


def _step(url: str) -> str:
    """A response of the tool's opening by its address: one name per step."""
    return "the tool's " + address_kind(urlsplit(url).path)


def _tails(size: int, phase: dict[str, Figures]) -> str:
    """p99 of the answers that do not finish an attempt and of those that do, both sides."""
    parts = []
    for of, label in (("others", "the others"), ("finishing", "the finishing ones")):
        moodle, tool = (phase[side].percentile(0.99, of) for side in ("moodle", "tool"))
        parts.append(f"{label} {moodle:.0f} / {tool:.0f} ({tool / moodle:.2f})" if moodle else "")
    return f"{size} students: " + ", ".join(parts)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def table(results: dict) -> str:
    rows = [
        "| figure | Moodle | tool | tool ÷ Moodle | target | |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    phases = results["phases"]
    one = phases[1]
    m, t = one["moodle"], one["tool"]
    rows.append(
        f"| one student, ms per answer (median) | {m.percentile(0.5):.1f} | "
        f"{t.percentile(0.5):.1f} | {t.percentile(0.5) / m.percentile(0.5):.2f} | | |"
    )
    for size in CLASS_SIZES[1:]:
        m, t = phases[size]["moodle"], phases[size]["tool"]
        ratio = t.rate / m.rate if m.rate else float("inf")
        rows.append(
            f"| {size} students, answers/s | {m.rate:.1f} | {t.rate:.1f} | {ratio:.1f}× | ≥ 10× | "
            f"{verdict(ratio >= 10)} |"
        )
        for label, share in (("p50", 0.5), ("p99", 0.99)):
            r = t.percentile(share) / m.percentile(share)
            rows.append(
                f"| {size} students, {label} ms | {m.percentile(share):.0f} | "
                f"{t.percentile(share):.0f} | {r:.2f} | ≤ 0.10 | {verdict(r <= 0.10)} |"
            )
    for size in CLASS_SIZES:
        m, t = phases[size]["moodle"], phases[size]["tool"]
        r = t.cpu_per_answer / m.cpu_per_answer
        rows.append(
            f"| server CPU per answer, ms ({size} student{'s' if size > 1 else ''}) | "
            f"{m.cpu_per_answer:.1f} | {t.cpu_per_answer:.1f} | {r:.2f} | ≤ 0.10 | "
            f"{verdict(r <= 0.10)} |"
        )
    o = results["opening_ms"]
    r = o["tool"] / o["moodle"]
    rows.append(
        "| opening the activity, median ms (Moodle: quiz page to question 1; tool: LTI launch "
        f"through Moodle to question 1) | {o['moodle']:.0f} | {o['tool']:.0f} | {r:.2f} | ≤ 0.30 | "
        f"{verdict(r <= 0.30)} |"
    )
    rows.append(
        "| of which the tool's launch waited on Moodle's pages (`launch.php`, `auth.php`), "
        f"median ms | | {o['tool in Moodle']:.0f} | {o['tool in Moodle'] / o['moodle']:.2f} | | |"
    )
    tails = "; ".join(_tails(size, phases[size]) for size in CLASS_SIZES if size > 1)
    steps = ", ".join(
        f"{k[len('the tool') + 3 :]} {v:.1f}" for k, v in o.items() if k.startswith("the tool's ")
    )
    lines = [
        "\n".join(rows),
        "",
        "p99 ms, Moodle / tool (ratio), of the answers that do not finish an attempt and of"
        f" those that do: {tails}",
        "",
        f"The tool's opening, each response of its own until its headers (median ms): {steps};"
        f" a trivial request to the tool (`GET /healthz` through its proxy) right after Moodle's"
        f" opening {o['a trivial request']:.1f}",
        "",
        "CPU ms per answer by process kind:",
    ]
    for size in CLASS_SIZES:
        for side in ("moodle", "tool"):
            f = phases[size][side]
            kinds = ", ".join(f"{k} {v:.2f}" for k, v in f.cpu_ms.items())
            lines.append(
                f"- {size} student(s), {side}: {f.answers} answers in {f.seconds:.1f} s,"
                f" {f.errors} errors{(' (first: ' + f.first_error + ')') if f.errors else ''};"
                f" {kinds}"
                + (
                    f"; apart, Moodle's php-fpm meanwhile (the tool's grades) {f.lms_cpu_ms:.2f}"
                    if side == "tool"
                    else ""
                )
                + f"; the whole machine {f.machine_cpu_ms:.2f}, {f.steal_share:.1%} of its CPU"
                f" time stolen by the host (before the run: {f.dirty_mb_before:.0f} MB written"
                f" out, {f.settled_s:.1f} s waited for a quiet machine, {f.busy_before:.0%}"
                " busy at first); the client's full garbage collections during the run:"
                f" {len(f.client_full_collections)},"
                f" {sum(f.client_full_collections) * 1000:.0f} ms"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30, help="per closed loop and side")
    args = parser.parse_args()
    # The tool as it runs in production: sessions, cache and broker on Redis (issue 21).
    os.environ.setdefault("TOOL_REDIS_URL", "redis://127.0.0.1:6379/4")
    settings = Settings.from_environment()
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    record = Record(settings.run_dir / "screens")
    tool = BenchTool(settings)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        found = set_up(settings, record, tool, max(CLASS_SIZES))
        print("\n" + record.table(), flush=True)
        results = asyncio.run(run(settings, tool, found, args.seconds))
    finally:
        if not settings.keep_running:
            tool.stop()
            subprocess.run(
                [str(HERE / "stop.sh"), "moodle"],
                env=dict(os.environ, ACCEPTANCE_DIR=str(settings.run_dir)),
            )
    load = os.getloadavg()
    print(
        f"\n{started}; {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} /"
        f" {load[2]:.1f} at the end; {args.seconds:g} s per closed loop and side"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
