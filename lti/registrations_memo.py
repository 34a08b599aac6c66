"""What a process keeps of the registrations between requests: the origins that may frame
the tool, and the rows a login and a launch look their registration up by.

Every request once read these from the database: a launch and its login each waited on a
statement for rows that change when an administrator registers a platform or turns one off
(docs/benchmarks.md). They are kept in an ``ops.process_memo.ProcessMemo``, whose shared
version any process moves when it saves or deletes a registration or a deployment, with the
change's commit: a change applies at once in the process that made it and within a second
of its commit in every other (decisions 65, 84 and 85).
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import ModelSignal, post_delete, post_save, pre_delete, pre_save
from django.dispatch import receiver

from ops.process_memo import ProcessMemo

from .models import Deployment, Registration

REGISTRATIONS_VERSION = "lti-registrations"  # its name among the shared versions

# The keys come from requests (an issuer, a client id): 256 at most.
registrations = ProcessMemo(REGISTRATIONS_VERSION, max_entries=256)
remembered = registrations.remembered
last_known = registrations.last_known
forget = registrations.forget


@receiver([pre_save, post_save, pre_delete, post_delete], sender=Registration)
@receiver([pre_save, post_save, pre_delete, post_delete], sender=Deployment)
def _registrations_changed(signal: ModelSignal, **kwargs: Any) -> None:
    registrations.row_changed(signal)
