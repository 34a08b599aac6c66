"""The API reads JSON only, and refuses what it cannot read as a 4xx in its error format:
bodies that are not UTF-8 (naming the encoding they came in where it shows), not JSON,
nested deeper than any request of the API needs (Python's parser recurses, so a deep enough
body was a RecursionError and a 500), or holding an unpaired surrogate (JSON's "\ud800"
escape decodes to one; no database text can store it, and it was a 500 when saved)."""

from __future__ import annotations

import codecs
from typing import Any

from django.utils.http import parse_header_parameters
from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils import json

from ops.text import has_unpaired_surrogate, walk_json

# No request body of the API nests beyond a few levels; this is well clear of that and far
# below the interpreter's recursion limit.
MAX_DEPTH = 32


def _problem(data: Any, limit: int) -> str | None:
    """What makes the parsed body unusable, or None."""
    for value, depth in walk_json(data):
        if isinstance(value, str) and has_unpaired_surrogate(value):
            return "The JSON holds text that is not valid Unicode (an unpaired surrogate)."
        if depth > limit and isinstance(value, (dict, list)):
            return f"The JSON is nested more than {limit} levels deep."
    return None


# JSON between systems is UTF-8 (RFC 8259, 8.1); these marks name the other encodings' bodies.
_BYTE_ORDER_MARKS = [
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
]


def _not_utf8(raw: bytes, media_type: str | None, at: int) -> str:
    """Why a body that is not UTF-8 is refused, naming the encoding it came in where its
    byte order mark or its declared charset tells (a body that happens to be valid UTF-8 is
    read whatever it declares: ASCII is the same in every charset a client declares)."""
    for mark, encoding in _BYTE_ORDER_MARKS:
        if raw.startswith(mark):
            return (
                f"The API reads JSON in UTF-8 only; this body is {encoding} "
                "(by its byte order mark)."
            )
    _type, parameters = parse_header_parameters(media_type or "")
    charset = parameters.get("charset", "").strip().lower()
    if charset and charset.replace("-", "").replace("_", "") != "utf8":
        return f"The API reads JSON in UTF-8 only; this body declares charset={charset}."
    return f"The body is not valid UTF-8 (byte {at})."


class JsonParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ParseError(_not_utf8(raw, media_type, error.start)) from None
        try:
            data = json.loads(text)  # DRF's: NaN and Infinity are refused
        except RecursionError:
            raise ParseError("The JSON is nested too deeply.") from None
        except ValueError as error:
            raise ParseError(f"The body is not valid JSON: {error}") from None
        problem = _problem(data, MAX_DEPTH)
        if problem is not None:
            raise ParseError(problem)
        return data
