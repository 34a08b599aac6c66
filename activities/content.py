"""What every activity kind's content files share: their languages, their one error, and
the strict reading of texts given in each language."""

from __future__ import annotations

from pathlib import Path

import yaml

LANGUAGES = ("en", "ru")


class ContentError(ValueError):
    """A content file (a quiz, the labs) is not valid; the message says where and why."""


def texts_by_language(value: object, where: str) -> dict[str, str]:
    """A text in each of the LANGUAGES, each a non-empty string, kept as written."""
    if not isinstance(value, dict) or set(value) != set(LANGUAGES):
        raise ContentError(f"{where}: needs a text for each of {', '.join(LANGUAGES)}")
    for language, text in value.items():
        if not isinstance(text, str) or not text.strip():
            raise ContentError(f"{where}.{language}: must be a non-empty string")
    return {language: value[language] for language in LANGUAGES}


def read_yaml(path: Path) -> object:
    """A content file's YAML; a file that cannot be read or parsed is a ContentError."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ContentError(f"{path}: cannot be read as YAML: {error}") from error
