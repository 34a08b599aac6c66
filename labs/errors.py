"""Lab refusals, on the course side's one base (activities.errors.DomainError), as the
quiz's are, so pages and the API report them alike."""

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

from activities.errors import DomainError

from .runner.policies import PolicyError


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


def policy_refusal(error: PolicyError) -> str:
    """Why a policy cannot run, in the reader's language: the runner's reason (English, from
    a template marked for the catalogues) translated, with what the student wrote in it."""
    reason = runner_reason(error.template, error.params)
    return _("This policy cannot run: %(reason)s.") % {"reason": reason}


def runner_reason(template: str, params: Mapping[str, Any]) -> str:
    """A reason of the runner's (``PolicyError``'s template and values) in the reader's
    language."""
    return _(template) % params
