"""The one base of the course side's domain errors. The quiz's and the labs' errors
subclass it, so pages and the API report any refusal alike: each carries the message its
reader sees and the HTTP status a view answers with."""

from __future__ import annotations


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ActivityNotLoaded(DomainError):
    """The activity a placement needs has not been loaded (``load_quiz``, ``load_labs``)."""

    status_code = 503


class InvalidInput(DomainError):
    """A staff action with values that cannot be applied (out of range, missing reason)."""

    status_code = 400


class PreviewOutdated(DomainError):
    """A regrade confirmed from a preview that no longer matches what it would do."""

    status_code = 409
