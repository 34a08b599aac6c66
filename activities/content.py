"""What every activity kind's content files share: their languages, their one error, and
the strict reading of texts given in each language."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

LANGUAGES = ("en", "ru")
# An activity's slug is stored in a SlugField of this length (Quiz.slug, Lab.slug).
SLUG_MAX_LENGTH = 100
_SLUG = re.compile(r"[-a-zA-Z0-9_]+")


class ContentError(ValueError):
    """A content file (a quiz, the labs) is not valid; the message says where and why."""


def texts_by_language(value: object, where: str) -> dict[str, str]:
    """A text in each of the LANGUAGES, each a non-empty string, kept as written."""
    if not isinstance(value, dict) or set(value) != set(LANGUAGES):
        raise ContentError(f"{where}: needs a text for each of {', '.join(LANGUAGES)}")
    for language, text in value.items():
        if not isinstance(text, str) or not text.strip():
            raise ContentError(f"{where}.{language}: must be a non-empty string")
        if "\x00" in text:  # PostgreSQL keeps no NUL in text or JSON
            raise ContentError(f"{where}.{language}: contains a NUL character")
    return {language: value[language] for language in LANGUAGES}


def read_yaml(path: Path) -> object:
    """A content file's YAML; a file that cannot be read or parsed is a ContentError."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ContentError(f"{path}: cannot be read as YAML: {error}") from error


def slug_of(value: object, where: str) -> str:
    """An activity's slug, as its SlugField stores it."""
    if not isinstance(value, str) or not _SLUG.fullmatch(value) or len(value) > SLUG_MAX_LENGTH:
        raise ContentError(
            f"{where}: must be a slug (letters, digits, - and _), at most "
            f"{SLUG_MAX_LENGTH} characters; got {str(value)[:120]!r}"
        )
    return value


def whole_number(value: object, where: str, minimum: int, maximum: int) -> int:
    """An integer from ``minimum`` to ``maximum`` (the range of the column that keeps it);
    true and false are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ContentError(f"{where}: must be a whole number from {minimum} to {maximum}")
    return value
