"""Text that no database column can hold, refused where it enters (launch claims, API JSON)."""

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
