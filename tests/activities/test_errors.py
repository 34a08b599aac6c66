"""The course side's domain errors survive being pickled and copied (a task's result, a
test's copy): each is made again with the message it was made with."""

from __future__ import annotations

import copy
import pickle

from activities.errors import ActivityNotLoaded, DomainError, InvalidInput, OutsideLaunch
from assessments.errors import NotAQuiz


def test_errors_are_made_again_with_their_message():
    for error in (
        ActivityNotLoaded("load_labs"),
        InvalidInput("The score must be between 0 and 8."),
        DomainError("Something the reader is told."),
        OutsideLaunch(),
        NotAQuiz(),
    ):
        for again in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
            assert type(again) is type(error)
            assert again.message == error.message
            assert str(again) == str(error)
            assert again.status_code == error.status_code
            assert vars(again) == vars(error)
    assert "manage.py load_labs" in ActivityNotLoaded("load_labs").message
