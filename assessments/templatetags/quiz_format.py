"""Formatting for the quiz pages in the reader's language."""

from __future__ import annotations

from datetime import timedelta

from django import template
from django.utils.translation import ngettext

register = template.Library()


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
