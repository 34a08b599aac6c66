"""Formatting for the quiz pages in the reader's language."""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache

from django import template
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, ngettext, override

from assessments.selectors import OptionView, QuestionView

register = template.Library()

# How a question's options are shown: as choices in the answer form, or reviewed after
# the answer (the right one and the student's marked).
OPTION_TEMPLATES = {
    "choice": "assessments/_option_choice.html",
    "reviewed": "assessments/_option_reviewed.html",
}


@register.simple_tag
def option_items(question: QuestionView, shown_as: str) -> SafeString:
    """The question's options as list items, in the order this attempt shows them. Each item
    is rendered once per process, option, way of showing and language (decision 50): a page
    shows 4 to 32 of them, the template's loop cost most of a page, and an option's text and
    mark never change."""
    template_name = OPTION_TEMPLATES[shown_as]
    language = get_language()
    return mark_safe(  # noqa: S308 - joins items each rendered by an autoescaping template
        "".join(_option_item(template_name, option, language) for option in question.options)
    )


@lru_cache(maxsize=8192)
def _option_item(template_name: str, option: OptionView, language: str) -> str:
    with override(language):
        return render_to_string(template_name, {"option": option})


@register.filter
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
