"""Formatting for the quiz pages in the reader's language."""

from __future__ import annotations

from collections.abc import Hashable
from functools import lru_cache

from django import template
from django.template import Context
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, override

from assessments.frames import (
    FRAME_VARIABLE,
    options_mark,
    render_results_part,
    results_fact_mark,
    results_part_mark,
)
from assessments.frames import results_fact as formatted_fact
from assessments.selectors import QuestionView

register = template.Library()

# How a question's options are shown: as choices in the answer form, or reviewed after
# the answer (the right one and the student's marked).
OPTION_TEMPLATES = {
    "choice": "assessments/_option_choice.html",
    "reviewed": "assessments/_option_reviewed.html",
}
# Parts of a page about one question and the student's answer to it, nothing of the
# attempt's own (its address, the form's token): the feedback after an answer, and on the
# results page a question's verdict in the strip and its review. The feedback and the review
# have a slot for the options, which they show reviewed.
QUESTION_TEMPLATES = {
    "feedback": "assessments/_feedback.html",
    "strip": "assessments/_strip_item.html",
    "review": "assessments/_review_item.html",
}
# Where a part's options go: rendered once per question and verdict, the part cannot hold
# them, since each attempt shows the options in its own order with its own choice. A tag no
# text can forge: the content's "<" comes out escaped.
OPTIONS_SLOT = "<gc-options-slot>"


@register.simple_tag(takes_context=True)
def option_items(context: Context, question: QuestionView, shown_as: str) -> SafeString:
    """The question's options as list items, in the order this attempt shows them; in a
    page's frame, the mark where each request puts them (decision 71)."""
    return _options(question, shown_as, framed=bool(context.get(FRAME_VARIABLE)))


def _options(question: QuestionView, shown_as: str, framed: bool) -> SafeString:
    return options_mark(question, shown_as) if framed else option_list(question, shown_as)


def option_list(question: QuestionView, shown_as: str) -> SafeString:
    """The question's options as list items, in the order this attempt shows them. Each item
    is rendered once per process, option, way of showing and language (decision 50): a page
    shows 4 to 32 of them, the template's loop cost most of a page, and an option's text and
    mark never change."""
    template_name = OPTION_TEMPLATES[shown_as]
    language = get_language()
    return mark_safe(  # noqa: S308 - joins items each rendered by an autoescaping template
        "".join(
            _rendered_once(template_name, "option", option, language) for option in question.options
        )
    )


@register.simple_tag(takes_context=True)
def question_part(context: Context, question: QuestionView, part: str) -> SafeString:
    """A part of a page about one question (``part``: a key of QUESTION_TEMPLATES), with this
    attempt's options in their slot (in a page's frame, their mark)."""
    return part_of_question(question, part, framed=bool(context.get(FRAME_VARIABLE)))


def part_of_question(question: QuestionView, part: str, framed: bool = False) -> SafeString:
    """A part of a page about one question, rendered once per process, question, verdict and
    language, with this attempt's options in their slot (``framed``: their mark): the results
    page reviews eight questions, and their loop was most of its template's time (decision
    52)."""
    around = _rendered_once(QUESTION_TEMPLATES[part], "question", question.shown, get_language())
    if OPTIONS_SLOT not in around:
        return mark_safe(around)  # noqa: S308 - rendered by an autoescaping template
    return mark_safe(  # noqa: S308 - both rendered by autoescaping templates
        around.replace(OPTIONS_SLOT, _options(question, "reviewed", framed), 1)
    )


@register.simple_tag(takes_context=True)
def results_part(context: Context, name: str) -> SafeString:
    """A part of the results page that differs between attempts at the same questions with
    the same verdicts (``frames.RESULTS_PARTS``), joined for this request from the attempt's
    view; in the page's frame, its mark (decision 74)."""
    if context.get(FRAME_VARIABLE):
        return results_part_mark(name)
    return render_results_part(name, context["view"])


@register.simple_tag(takes_context=True)
def results_fact(context: Context, name: str) -> SafeString:
    """A fact of the results page about the attempt or the student's grade
    (``frames.RESULTS_FACTS``), formatted for this request; in the page's frame, its mark
    (decision 77)."""
    if context.get(FRAME_VARIABLE):
        return results_fact_mark(name)
    return formatted_fact(name, context["view"], context["overview"])


@lru_cache(maxsize=8192)
def _rendered_once(template_name: str, name: str, value: Hashable, language: str) -> str:
    with override(language):
        return render_to_string(template_name, {name: value, "options": mark_safe(OPTIONS_SLOT)})
