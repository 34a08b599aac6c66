"""One error format for every API failure: {"error": {"status", "code", "message", "details"}}."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from activities.errors import DomainError


def _message(detail) -> str:
    if isinstance(detail, dict):
        field, value = next(iter(detail.items()), ("", ""))
        text = _message(value)
        return text if field in ("detail", "non_field_errors") else f"{field}: {text}"
    if isinstance(detail, list):
        return _message(detail[0]) if detail else ""
    return str(detail)


class BodyTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "body_too_large"


def api_exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        # Django refuses it while reading the body; unhandled it was its HTML 400 page.
        exc = BodyTooLarge(
            f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."
        )
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found, or not yours to see.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    code = getattr(exc, "default_code", "error")
    if isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else code
    response.data = {
        "error": {
            "status": response.status_code,
            "code": code,
            "message": _message(detail),
            "details": detail if isinstance(detail, dict | list) else {},
        }
    }
    return response


def domain_error(error: DomainError) -> Response:
    return Response(
        {
            "error": {
                "status": error.status_code,
                "code": type(error).__name__,
                "message": error.message,
                "details": {},
            }
        },
        status=error.status_code or status.HTTP_400_BAD_REQUEST,
    )
