"""Lab refusals, on the course side's one base (activities.errors.DomainError), as the
quiz's are, so pages and the API report them alike."""

from activities.errors import DomainError


class LabError(DomainError):
    """A refusal of a lab."""


class InvalidPolicy(LabError):
    status_code = 400


class InvalidSchedule(LabError):
    status_code = 400


class LabNotOpen(LabError):
    """Not open yet, closed, past due with no late runs, or every run used."""

    status_code = 403


class RunPending(LabError):
    status_code = 409


class DemoQueueFull(LabError):
    """The demo course's runs waiting or running reached DEMO_LAB_QUEUE_CAP."""

    status_code = 503
