"""Texts kept in several languages (a dict of language code to text)."""

from __future__ import annotations


def localized(texts: dict[str, str], language: str, fallback: str = "en") -> str:
    """The text in ``language``, else in ``fallback``, else in any language it has."""
    return texts.get(language) or texts.get(fallback) or next(iter(texts.values()), "")
