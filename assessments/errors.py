"""The quiz's refusals, on the course side's one base (activities.errors.DomainError)."""

from django.utils.translation import gettext as _

from activities.errors import DomainError


class AssessmentError(DomainError):
    """A refusal of the quiz."""


class InvalidAnswer(AssessmentError):
    """The answer does not fit the attempt: unknown question or option, malformed input."""

    status_code = 400


class AnswerConflict(AssessmentError):
    """The answer is well-formed but cannot be taken now: already answered, out of turn,
    or the attempt is finished."""

    status_code = 409


class NotAQuiz(AssessmentError):
    """The placement places another kind of activity (as ``activities.access.member_placement``
    refuses it)."""

    status_code = 404

    def __init__(self) -> None:
        super().__init__(_("This activity is not a %(kind)s.") % {"kind": _("quiz")})


class AttemptLimitReached(AssessmentError):
    status_code = 403


class StartConflict(AssessmentError):
    """Starts of the same student's attempt kept racing: the start is refused, to be tried
    again."""

    status_code = 409
