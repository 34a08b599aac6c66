"""Text that no database column can hold, refused where it enters (launch claims, a
platform's registration answers, API JSON)."""

from __future__ import annotations


def has_unpaired_surrogate(text: str) -> bool:
    """Whether ``text`` holds an unpaired surrogate, which UTF-8, and so no database text, can
    encode. JSON's ``"\\ud800"`` escape decodes to one; a form or a URL cannot carry one."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def holds_unstorable_text(value: object) -> bool:
    """Whether any string inside decoded JSON (keys included) holds what no database text
    can store: a NUL, or an unpaired surrogate."""
    if isinstance(value, str):
        return "\x00" in value or has_unpaired_surrogate(value)
    if isinstance(value, dict):
        return any(
            holds_unstorable_text(key) or holds_unstorable_text(item) for key, item in value.items()
        )
    if isinstance(value, list):
        return any(holds_unstorable_text(item) for item in value)
    return False
