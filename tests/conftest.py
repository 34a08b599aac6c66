from __future__ import annotations

import pytest
from django.test import Client

from assessments.content import SEED_QUIZ_FILE, read_quiz_file
from assessments.models import Quiz
from assessments.services import load_quiz
from lti.models import ResourceLink
from lti.services import enrol_demo_learner


@pytest.fixture(scope="session")
def seed_content():
    return read_quiz_file(SEED_QUIZ_FILE)


@pytest.fixture
def quiz(db, seed_content) -> Quiz:
    return load_quiz(seed_content).quiz


@pytest.fixture
def learner(quiz):
    user, _ = enrol_demo_learner()
    return user


@pytest.fixture
def placement(learner) -> ResourceLink:
    return ResourceLink.objects.get(context__memberships__user=learner)


@pytest.fixture
def learner_client(learner) -> Client:
    client = Client()
    client.force_login(learner)
    return client
