"""The one base of the course side's domain errors. The quiz's and the labs' errors
subclass it, so pages and the API report any refusal alike: each carries the message its
reader sees and the HTTP status a view answers with."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled or copied, an error is made again as it is, with its message and fields:
        # not by calling the class with its message, which a subclass that takes other
        # arguments, or none, would misread. (Celery's JSON results rebuild an exception from
        # its args without this; no task returns one, and results are ignored.)
        return (_made_again, (type(self), self.args), self.__dict__)


def _made_again(error_class: type[DomainError], args: tuple[Any, ...]) -> DomainError:
    error = error_class.__new__(error_class)
    Exception.__init__(error, *args)
    return error


class ActivityNotLoaded(DomainError):
    """The activity a placement needs has not been loaded: ``load_command`` (``load_quiz``,
    ``load_labs``) loads it."""

    status_code = 503

    def __init__(self, load_command: str) -> None:
        super().__init__(
            _("This activity is not loaded yet. Run `python manage.py %(command)s`.")
            % {"command": load_command}
        )
        self.load_command = load_command


class InvalidInput(DomainError):
    """A staff action with values that cannot be applied (out of range, missing reason)."""

    status_code = 400


class PreviewOutdated(DomainError):
    """A regrade confirmed from a preview that no longer matches what it would do."""

    status_code = 409


class OutsideLaunch(DomainError):
    """The activity's course is not one this session may reach now: it was not launched into
    that course, or the membership or the LMS that launch came from was removed or turned
    off since."""

    status_code = 403

    def __init__(self) -> None:
        super().__init__(
            _(
                "You are not enrolled in the course of this activity, or you did not open it "
                "from that course. Open it from your course in the LMS."
            )
        )
