"""Domain errors. Each carries the message the student sees and the HTTP status a view
(page or API) answers with, so every caller reports bad input the same way."""


class AssessmentError(Exception):
    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidAnswer(AssessmentError):
    """The answer does not fit the attempt: unknown question or option, malformed input."""

    status_code = 400


class AnswerConflict(AssessmentError):
    """The answer is well-formed but cannot be taken now: already answered, out of turn,
    or the attempt is finished."""

    status_code = 409


class AttemptLimitReached(AssessmentError):
    status_code = 403


class InvalidInput(AssessmentError):
    """A staff action with values that cannot be applied (out of range, missing reason)."""

    status_code = 400


class PreviewOutdated(AssessmentError):
    """A regrade confirmed from a preview that no longer matches what it would do."""

    status_code = 409
