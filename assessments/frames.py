"""The answer loop's pages from frames kept once per process (decision 71).

Two students at the same question of the same quiz version, in the same language, see the
same question page but for five values: the attempt's address, the placement's (the link to
the activity's page), the form's CSRF token, how many questions they have answered and the
options, in their attempt's order with their choice. So a page is rendered from its template
once per process, page, language and content, with a mark where each of those values goes,
and cut at the marks: a *frame*. A request joins the frame's cuts with its own values, and
the template engine is not run at all.

The marks cannot be forged by content. The CSRF token's, the answered count's and the
options' are tags (``<gc-slot-…>``), and content comes out of an autoescaping template with
its ``<`` escaped; the attempt's and the placement's ids go into addresses, which must hold a
UUID and a number, so their marks are a UUID and an 18-digit number drawn at random when the
process starts, which no text can know.

A frame keyed on too little would show one student another's page; every value a frame holds
is in its key (``question_page`` and ``feedback_page``), and
``tests/assessments/test_frames.py`` checks every page a frame makes against the template's
own rendering of it.
"""

from __future__ import annotations

import re
import secrets
import threading
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, override

from .selectors import AttemptView, QuestionView

# The context variable that tells the option tags they render a frame: each leaves its
# options' mark (``options_mark``) instead of the options.
FRAME_VARIABLE = "frame_marks"
CSRF_MARK = mark_safe("<gc-slot-csrf>")
ANSWERED_MARK = mark_safe("<gc-slot-answered>")
# Drawn once per process: an attempt's id is a random UUID too, and content cannot know
# either. The placement's is a number (its address's converter takes digits only); no UUID's
# hex group is 18 characters long, so neither mark can hold the other.
ATTEMPT_MARK = uuid.uuid4()
PLACEMENT_MARK = secrets.randbelow(9 * 10**17) + 10**17
MARKS = re.compile(
    "<gc-slot-(?P<simple>csrf|answered)>"
    "|<gc-slot-options-(?P<position>[0-9]+)-(?P<shown_as>choice|reviewed)>"
    f"|(?P<attempt>{ATTEMPT_MARK})"
    f"|(?P<placement>{PLACEMENT_MARK})"
)
# Frames kept per process: a quiz version has three per question and language (the question
# page and the feedback page's two verdicts), whichever placements show it; beyond this
# the oldest go.
MAX_FRAMES = 4096

Slot = tuple[Hashable, ...]


def options_mark(question: QuestionView, shown_as: str) -> SafeString:
    """Where a frame takes a question's options, shown as ``shown_as``."""
    return mark_safe(f"<gc-slot-options-{question.position}-{shown_as}>")


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
            else:
                slots.append(("options", int(found["position"]), found["shown_as"]))
            start = found.end()
        cuts.append(page[start:])
        self.cuts = tuple(cuts)
        self.slots = tuple(slots)

    def fill(self, view: AttemptView, csrf_token: str) -> str:
        values = {
            ("csrf",): csrf_token,
            ("attempt",): str(view.attempt.public_id),
            ("placement",): str(view.attempt.placement_id),
            ("answered",): str(view.answered_count),
        }
        parts = [self.cuts[0]]
        for slot, cut in zip(self.slots, self.cuts[1:], strict=True):
            value = values.get(slot)
            if value is None:
                value = values[slot] = _options(view, slot)
            parts.append(value)
            parts.append(cut)
        return "".join(parts)


def _options(view: AttemptView, slot: Slot) -> str:
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


def forget_frames() -> None:
    """Drop every frame (the tests; a deploy restarts the processes)."""
    with _frames_lock:
        _frames.clear()
