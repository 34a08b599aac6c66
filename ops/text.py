"""Text that no database column can hold, refused where it enters (launch claims, a
platform's registration answers, API JSON)."""

from __future__ import annotations

from collections.abc import Iterator


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


def walk_json(value: object) -> Iterator[tuple[object, int]]:
    """Every value inside decoded JSON, keys included, with its depth (the value itself at
    1). Without recursion: a body nested a few hundred levels deep, which Python's parser
    reads, must not exhaust the interpreter's stack where it is checked."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        yield item, depth
        if isinstance(item, dict):
            stack.extend((inner, depth + 1) for inner in (*item.keys(), *item.values()))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)


def is_unstorable_text(value: object) -> bool:
    """Whether ``value`` is a string that no database text can store: one holding a NUL or
    an unpaired surrogate."""
    return isinstance(value, str) and ("\x00" in value or has_unpaired_surrogate(value))


def holds_unstorable_text(value: object) -> bool:
    """Whether any string inside decoded JSON (keys included) is unstorable text."""
    return any(is_unstorable_text(item) for item, _depth in walk_json(value))
