"""Lab refusals, on the same base as the quiz's so pages and the API report them alike."""

from assessments.errors import AssessmentError


class InvalidPolicy(AssessmentError):
    status_code = 400


class InvalidSchedule(AssessmentError):
    status_code = 400


class LabNotOpen(AssessmentError):
    """Not open yet, closed, past due with no late runs, or every run used."""

    status_code = 403


class RunPending(AssessmentError):
    status_code = 409


class DemoQueueFull(AssessmentError):
    """The demo course's runs waiting or running reached DEMO_LAB_QUEUE_CAP."""

    status_code = 503
