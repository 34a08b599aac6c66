"""The answer loop's pages from frames kept once per process (decision 71).

Two students at the same question of the same quiz version, in the same language, see the
same question page but for five values: the attempt's address, the placement's (the link to
the activity's page), the form's CSRF token, how many questions they have answered and the
options, in their attempt's order with their choice. So a page is rendered from its template
once per process, page, language and content, with a mark where each of those values goes,
and cut at the marks: a *frame*. A request joins the frame's cuts with its own values, and
the template engine is not run at all.

The results page (decision 74) is framed per language, content and the verdict of the answer
it opens with; what differs between attempts beyond the values above (the attempt's number
and score, its facts and grade, the buttons its policy leaves, its verdicts with their
reviewed options) goes into slots of its own: each fact a value formatted for the request
(decision 77), the verdict strip and the review joined from the parts kept per question and
verdict (decision 52).

The marks cannot be forged by content. The CSRF token's, the answered count's and the
options' are tags (``<gc-slot-…>``), and content comes out of an autoescaping template with
its ``<`` escaped; the attempt's and the placement's ids go into addresses, which must hold a
UUID and a number, so their marks are a UUID and an 18-digit number drawn at random when the
process starts, which no text can know.

A frame keyed on too little would show one student another's page; every value a frame holds
is in its key (``question_page``, ``feedback_page`` and ``results_page``), and
``tests/assessments/test_frames.py`` and ``test_results_frames.py`` check every page a frame
makes against the template's own rendering of it.
"""

from __future__ import annotations

import re
import secrets
import threading
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.template.defaultfilters import date
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.formats import localize
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime
from django.utils.translation import get_language, ngettext, override

from activities.grading import format_grade

from .selectors import AttemptView, PlacementOverview, QuestionView

# The context variable that tells the option tags they render a frame: each leaves its
# options' mark (``options_mark``) instead of the options.
FRAME_VARIABLE = "frame_marks"
CSRF_MARK = mark_safe("<gc-slot-csrf>")
ANSWERED_MARK = mark_safe("<gc-slot-answered>")
NUMBER_MARK = mark_safe("<gc-slot-number>")
SCORE_MARK = mark_safe("<gc-slot-score>")
MAX_SCORE_MARK = mark_safe("<gc-slot-max-score>")
RESUME_MARK = mark_safe("<gc-slot-resume>")
# Drawn once per process: an attempt's id is a random UUID too, and content cannot know
# either. The placement's is a number (its address's converter takes digits only); no UUID's
# hex group is 18 characters long, so neither mark can hold the other.
ATTEMPT_MARK = uuid.uuid4()
PLACEMENT_MARK = secrets.randbelow(9 * 10**17) + 10**17
# The results page's parts that differ between attempts with the same verdicts, joined for
# each request from the questions' parts kept per verdict.
RESULTS_PARTS = ("strip", "review")


def _localized(value: object) -> str:
    """A value as a template shows it: in the language's number format, escaped."""
    return conditional_escape(localize(value))


def _date(moment: datetime | None, format_name: str) -> str:
    # The template's date filter takes its value in the current time zone.
    return _localized(date(template_localtime(moment), format_name))


def duration(value: timedelta | None) -> str:
    """A time taken as Moodle's review shows it, to the second, in words with the
    language's plural forms ("1 hour 2 minutes", "2 минуты 5 секунд")."""
    if value is None:
        return "—"
    seconds = max(int(value.total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(ngettext("%(count)d hour", "%(count)d hours", hours) % {"count": hours})
    if minutes:
        parts.append(
            ngettext("%(count)d minute", "%(count)d minutes", minutes) % {"count": minutes}
        )
    if seconds or not parts:
        parts.append(
            ngettext("%(count)d second", "%(count)d seconds", seconds) % {"count": seconds}
        )
    return " ".join(parts)


def _override_note(_view: AttemptView, overview: PlacementOverview) -> str:
    return render_to_string("activities/_override_note.html", {"grade": overview.grade})


def _attempt_count(_view: AttemptView, overview: PlacementOverview) -> str:
    count = overview.finished_count
    # As the template's blocktranslate: the number localized, the sentence as translated.
    return conditional_escape(
        ngettext("%(count)s attempt", "%(count)s attempts", count) % {"count": localize(count)}
    )


# The results page's facts about the attempt and the student's grade, each formatted for its
# request by the one function that the template's own rendering calls too
# (``{% results_fact %}``); the frame holds which of them the page shows (decision 77).
RESULTS_FACTS: dict[str, Callable[[AttemptView, PlacementOverview], str]] = {
    "started-iso": lambda view, _: _date(view.attempt.started_at, "c"),
    "started": lambda view, _: _date(view.attempt.started_at, "DATETIME_FORMAT"),
    "finished-iso": lambda view, _: _date(view.attempt.finished_at, "c"),
    "finished": lambda view, _: _date(view.attempt.finished_at, "DATETIME_FORMAT"),
    "time-taken": lambda view, _: _localized(duration(view.time_taken)),
    "percent": lambda view, _: _localized(view.percent),
    "grade-given": lambda _, overview: _localized(format_grade(overview.grade.score_given)),
    "grade-maximum": lambda _, overview: _localized(format_grade(overview.grade.score_maximum)),
    "grade-percent": lambda _, overview: _localized(format_grade(overview.grade_percent)),
    "override-note": _override_note,
    "method": lambda _, overview: _localized(overview.policy.grading_method_label),
    "attempt-count": _attempt_count,
}
MARKS = re.compile(
    "<gc-slot-(?P<simple>csrf|answered|number|score|max-score|resume)>"
    "|<gc-slot-options-(?P<position>[0-9]+)-(?P<shown_as>choice|reviewed)>"
    f"|<gc-slot-part-(?P<part>{'|'.join(RESULTS_PARTS)})>"
    f"|<gc-slot-fact-(?P<fact>{'|'.join(RESULTS_FACTS)})>"
    f"|(?P<attempt>{ATTEMPT_MARK})"
    f"|(?P<placement>{PLACEMENT_MARK})"
)
# Frames kept per process: a quiz version has three per question and language (the question
# page and the feedback page's two verdicts) and up to 54 results pages (read again or opening
# with the last answer's either verdict, times the three buttons, the grade's three states
# and one attempt or several), whichever placements show it; beyond this the oldest go.
MAX_FRAMES = 4096

Slot = tuple[Hashable, ...]


def options_mark(question: QuestionView, shown_as: str) -> SafeString:
    """Where a frame takes a question's options, shown as ``shown_as``."""
    return mark_safe(f"<gc-slot-options-{question.position}-{shown_as}>")


def results_part_mark(name: str) -> SafeString:
    """Where the results page's frame takes its part ``name`` (a key of RESULTS_PARTS)."""
    if name not in RESULTS_PARTS:
        raise LookupError(f"the results page has no part {name!r}")
    return mark_safe(f"<gc-slot-part-{name}>")


def render_results_part(name: str, view: AttemptView) -> SafeString:
    """The results page's part ``name`` for this attempt: what the page's template and its
    frame both show there."""
    from .templatetags.quiz_format import part_of_question  # the tags import this module

    return mark_safe(  # noqa: S308 - each part rendered by an autoescaping template
        "".join(part_of_question(question, name) for question in view.questions)
    )


def results_fact_mark(name: str) -> SafeString:
    """Where the results page's frame takes its fact ``name`` (a key of RESULTS_FACTS)."""
    if name not in RESULTS_FACTS:
        raise LookupError(f"the results page has no fact {name!r}")
    return mark_safe(f"<gc-slot-fact-{name}>")


def results_fact(name: str, view: AttemptView, overview: PlacementOverview) -> SafeString:
    """The results page's fact ``name`` for this attempt and overview, escaped."""
    return mark_safe(RESULTS_FACTS[name](view, overview))  # noqa: S308 - escaped or rendered


@dataclass(frozen=True)
class _FrameAttempt:
    public_id: uuid.UUID
    placement_id: int


@dataclass(frozen=True)
class _FrameView:
    """What the loop's templates read of an attempt's view, with marks for the attempt's own."""

    title: str
    attempt: _FrameAttempt
    answered_count: SafeString = ANSWERED_MARK


@dataclass(frozen=True)
class _FrameFinishedAttempt:
    public_id: uuid.UUID
    placement_id: int
    number: SafeString = NUMBER_MARK
    score: SafeString = SCORE_MARK
    max_score: SafeString = MAX_SCORE_MARK


@dataclass(frozen=True)
class _FrameResultsView:
    """What the results page's template reads of an attempt's view outside its parts."""

    title: str
    attempt: _FrameFinishedAttempt


@dataclass(frozen=True)
class _FrameInProgress:
    number: SafeString = RESUME_MARK


@dataclass(frozen=True)
class _FrameGrade:
    is_overridden: bool


@dataclass(frozen=True)
class _FrameOverview:
    """What the results page's template reads of the activity's overview outside its parts
    and facts, all in the frame's key: which button the student gets (with a mark for the
    number of the attempt in progress), whether there is a grade and whether the instructor
    set it, and whether the student has finished more than one attempt (1 or 2; the count
    itself is a fact)."""

    in_progress: _FrameInProgress | None
    can_start: bool
    grade: _FrameGrade | None
    finished_count: int


class Frame:
    """A page cut at its marks: ``cuts`` are the text between them, ``slots`` what goes into
    each gap (one fewer than the cuts)."""

    __slots__ = ("cuts", "slots")

    def __init__(self, page: str) -> None:
        cuts: list[str] = []
        slots: list[Slot] = []
        start = 0
        for found in MARKS.finditer(page):
            cuts.append(page[start : found.start()])
            if found["simple"]:
                slots.append((found["simple"],))
            elif found["attempt"]:
                slots.append(("attempt",))
            elif found["placement"]:
                slots.append(("placement",))
            elif found["part"]:
                slots.append(("part", found["part"]))
            elif found["fact"]:
                slots.append(("fact", found["fact"]))
            else:
                slots.append(("options", int(found["position"]), found["shown_as"]))
            start = found.end()
        cuts.append(page[start:])
        self.cuts = tuple(cuts)
        self.slots = tuple(slots)

    def fill(
        self, view: AttemptView, csrf_token: str, overview: PlacementOverview | None = None
    ) -> str:
        """The page for this request: ``overview`` is the results page's (its parts)."""
        values: dict[Slot, str] = {("csrf",): csrf_token}
        parts = [self.cuts[0]]
        for slot, cut in zip(self.slots, self.cuts[1:], strict=True):
            value = values.get(slot)
            if value is None:
                value = values[slot] = _filled(view, slot, overview)
            parts.append(value)
            parts.append(cut)
        return "".join(parts)


# What a slot of one value holds, from the attempt's view: formatted only for the pages whose
# frames have that slot.
_VALUES: dict[str, Callable[[AttemptView], object]] = {
    "attempt": lambda view: view.attempt.public_id,
    "placement": lambda view: view.attempt.placement_id,
    "answered": lambda view: view.answered_count,
    "number": lambda view: view.attempt.number,
    "score": lambda view: view.attempt.score,
    "max-score": lambda view: view.attempt.max_score,
}


def _filled(view: AttemptView, slot: Slot, overview: PlacementOverview | None) -> str:
    kind = slot[0]
    if kind in _VALUES:
        return str(_VALUES[kind](view))  # type: ignore[index]
    if kind == "resume":
        if overview is None or overview.in_progress is None:
            raise LookupError("a results page's resume button is filled with its overview")
        return str(overview.in_progress.number)
    if kind == "part":
        return render_results_part(slot[1], view)  # type: ignore[arg-type]
    if kind == "fact":
        if overview is None:
            raise LookupError("a results page's facts are filled with its overview")
        return results_fact(slot[1], view, overview)  # type: ignore[arg-type]
    from .templatetags.quiz_format import option_list  # the tags import this module

    _kind, position, shown_as = slot
    question = view.question_at(position)  # type: ignore[arg-type]
    if question is None:  # a frame is made from this attempt's version: it has the position
        raise LookupError(f"the attempt has no question {position}")
    return option_list(question, shown_as)  # type: ignore[arg-type]


_frames: dict[Hashable, Frame] = {}
# Reads take no lock (a dict's get is atomic); a miss's eviction and insert do, so that two
# threads of a worker (GUNICORN_THREADS) cannot evict the same oldest frame.
_frames_lock = threading.Lock()


def _frame(key: Hashable, render: Callable[[], str]) -> Frame:
    found = _frames.get(key)
    if found is None:
        found = Frame(render())
        with _frames_lock:
            while len(_frames) >= MAX_FRAMES:
                del _frames[next(iter(_frames))]
            _frames[key] = found
    return found


def _render_frame(template_name: str, language: str, context: dict[str, Any]) -> str:
    with override(language):
        return render_to_string(
            template_name, {**context, "csrf_token": CSRF_MARK, FRAME_VARIABLE: True}
        )


_FRAME_VIEW_ATTEMPT = _FrameAttempt(ATTEMPT_MARK, PLACEMENT_MARK)

QUESTION_TEMPLATE = "assessments/question.html"
FEEDBACK_TEMPLATE = "assessments/feedback.html"


def question_page(view: AttemptView, question: QuestionView, csrf_token: str) -> str:
    """The page of ``question``, the attempt's current one."""
    language = get_language()
    # The key is everything of the page that its frame holds.
    key = (QUESTION_TEMPLATE, language, view.title, question.shown)
    frame = _frame(
        key,
        lambda: _render_frame(
            QUESTION_TEMPLATE,
            language,
            {
                "view": _FrameView(view.title, _FRAME_VIEW_ATTEMPT),
                "question": question,
                "page_address": reverse("assessments:attempt", args=[ATTEMPT_MARK]),
            },
        ),
    )
    return frame.fill(view, csrf_token)


def feedback_page(view: AttemptView, question: QuestionView, csrf_token: str) -> str:
    """The feedback on the answer to ``question``, with the next question's form under it
    or, after the last answer, the link to the results."""
    language = get_language()
    finished = view.attempt.is_finished
    next_question = None if finished else view.current_question
    key = (
        FEEDBACK_TEMPLATE,
        language,
        view.title,
        finished,
        question.shown,
        None if next_question is None else next_question.shown,
    )
    frame = _frame(
        key,
        lambda: _render_frame(
            FEEDBACK_TEMPLATE,
            language,
            {
                "view": _FrameView(view.title, _FRAME_VIEW_ATTEMPT),
                "question": question,
                "finished": finished,
                "next_question": next_question,
                "page_address": reverse(
                    "assessments:feedback", args=[ATTEMPT_MARK, question.position]
                ),
            },
        ),
    )
    return frame.fill(view, csrf_token)


RESULTS_TEMPLATE = "assessments/summary.html"


def results_page(
    view: AttemptView,
    overview: PlacementOverview,
    just_answered: QuestionView | None,
    csrf_token: str,
) -> str:
    """The results of a finished attempt, opening with the feedback on ``just_answered``
    (the last answer's response) when there is one."""
    language = get_language()
    shown = None if just_answered is None else just_answered.shown
    grade = overview.grade
    frame_overview = _FrameOverview(
        in_progress=None if overview.in_progress is None else _FrameInProgress(),
        can_start=overview.can_start,
        grade=None if grade is None else _FrameGrade(grade.is_overridden),
        finished_count=min(overview.finished_count, 2),
    )
    key = (RESULTS_TEMPLATE, language, view.title, shown, frame_overview)

    def render() -> str:
        address = reverse("assessments:summary", args=[ATTEMPT_MARK])
        if just_answered is not None:
            address += "?" + urlencode({"answered": just_answered.position})
        frame_attempt = _FrameFinishedAttempt(ATTEMPT_MARK, PLACEMENT_MARK)
        return _render_frame(
            RESULTS_TEMPLATE,
            language,
            {
                "view": _FrameResultsView(view.title, frame_attempt),
                "overview": frame_overview,
                "just_answered": just_answered,
                "page_address": address,
            },
        )

    return _frame(key, render).fill(view, csrf_token, overview)


def forget_frames() -> None:
    """Drop every frame (the tests; a deploy restarts the processes)."""
    with _frames_lock:
        _frames.clear()
