"""LTI 1.3 launches driven by an independent platform implementation (lti1p3platform)."""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

import pytest
from django.core import signing
from django.core.signing import b62_encode
from django.test import Client
from django.urls import reverse

from assessments.models import Attempt
from lti.models import Context, LtiUser, Membership, ResourceLink, Role
from lti.spent_launch import SPENT_LAUNCH_COOKIE
from tests.lti_platform import ROLE, launch, start_login
from tests.quiz_helpers import OPTION_IDS, QUESTION_ID, answer_all, current_form, start

SUBROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership/"

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("login_method", ["get", "post"])
def test_student_launch_lands_in_the_quiz_signed_in(client, platform, login_method):
    response = launch(client, platform, login_method=login_method, user_id="stu-1")
    assert response.status_code == 302
    placement = ResourceLink.objects.get(resource_link_id="rl-1")
    assert urlsplit(response["Location"]).path == reverse(
        "assessments:placement", args=[placement.pk]
    )

    page = client.get(response["Location"])
    assert page.status_code == 200
    assert "Start the quiz" in page.content.decode()
    lti_user = LtiUser.objects.get(sub="stu-1")
    assert lti_user.name == "Ada Lovelace"
    assert lti_user.email == "ada@example.edu"
    membership = Membership.objects.get(user=lti_user.user)
    assert membership.role == Role.LEARNER
    assert membership.context.title == "Deep Learning Systems"
    assert placement.context.deployment.deployment_id == "1"

    attempt = start(client, placement.pk)
    assert "Your score: 8 of 8" in answer_all(client, attempt, lambda _q: True)


def test_a_student_launched_again_midway_lands_on_the_question_they_were_on(client, platform):
    launch(client, platform, user_id="stu-1")
    placement = ResourceLink.objects.get(resource_link_id="rl-1")
    attempt = start(client, placement.pk)

    def answer_one(browser: Client) -> None:
        question, option_ids = current_form(browser, attempt)
        answered = browser.post(
            reverse("assessments:answer", args=[attempt.public_id]),
            {"question": question.pk, "option": option_ids[0]},
        )
        assert answered.status_code == 200  # its feedback, or after the last the results

    answer_one(client)
    where = client.get(reverse("assessments:attempt", args=[attempt.public_id])).content.decode()
    assert "Question 2 of 8" in where

    # The next day, from the course: straight back to question 2, in a new session. The
    # launch's state cookie came back, so the launch answers with the question itself
    # (decision 60), naming the question's address for the address bar and a reload.
    browser = Client()
    response = launch(browser, platform, user_id="stu-1")
    address = reverse("assessments:attempt", args=[attempt.public_id])
    assert response.status_code == 200
    page = response.content.decode()
    assert "Question 2 of 8" in page
    assert f'<link rel="canonical" href="{address}">' in page
    assert "Question 2 of 8" in browser.get(address).content.decode()  # the reload
    # The activity's page, with the grade and earlier attempts, is a link away.
    assert f'href="{reverse("assessments:placement", args=[placement.pk])}"' in page
    # Another student of the course, or this one in another placement of the quiz in the
    # course, lands on the activity's page: the attempt is this student's on this placement.
    other = launch(Client(), platform, user_id="stu-2")
    assert urlsplit(other["Location"]).path == reverse("assessments:placement", args=[placement.pk])
    elsewhere = launch(Client(), platform, user_id="stu-1", resource_link_id="rl-2")
    second = ResourceLink.objects.get(resource_link_id="rl-2")
    assert urlsplit(elsewhere["Location"]).path == reverse(
        "assessments:placement", args=[second.pk]
    )

    # Finished: the launch lands on the activity's page, with the attempt listed.
    for _ in range(7):
        answer_one(browser)
    finished = launch(browser, platform, user_id="stu-1")
    landing = browser.get(finished["Location"]).content.decode()
    assert "Review attempt 1" in landing
    assert "Start a new attempt" in landing


def test_the_question_a_launch_answers_with_takes_an_answer_in_the_launch_session(platform):
    """The launch signs the browser in and rotates its CSRF token, then renders the question
    (decision 60): the form on that page must carry the rotated token, or the first answer
    after every relaunch would be refused."""
    first = Client()
    launch(first, platform, user_id="stu-1")
    attempt = start(first, ResourceLink.objects.get().pk)

    browser = Client(enforce_csrf_checks=True)
    page = launch(browser, platform, user_id="stu-1").content.decode()
    question, option_ids = QUESTION_ID.search(page).group(1), OPTION_IDS.findall(page)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    answered = browser.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question, "option": option_ids[0], "csrfmiddlewaretoken": token},
    )
    assert answered.status_code == 200, answered.content.decode()[:300]
    assert "Question 2 of 8" in answered.content.decode()  # the next question's form


def test_a_spent_launch_posted_again_by_its_browser_leads_to_where_it_landed(platform):
    """Without JavaScript the address bar keeps the launch's address, and a reload posts the
    launch again, its state and nonce spent: the browser that made it is sent where the
    launch landed (a page fetched, not a launch replayed). Another browser, or a forged mark
    of the spent launch, is refused as any replay is."""
    first = Client()
    launch(first, platform, user_id="stu-1")
    attempt = start(first, ResourceLink.objects.get().pk)
    address = reverse("assessments:attempt", args=[attempt.public_id])

    browser = Client()
    signed = platform.authorize(
        start_login(browser, platform, user_id="stu-1"), user_id="stu-1", roles=[ROLE + "Learner"]
    )
    assert "Question 1 of 8" in browser.post("/lti/launch/", signed).content.decode()
    again = browser.post("/lti/launch/", signed)
    assert again.status_code == 303
    assert again["Location"] == address
    assert "Question 1 of 8" in browser.get(again["Location"]).content.decode()

    thief = Client()
    refused = thief.post("/lti/launch/", signed)
    assert refused.status_code in (400, 403)
    # A browser with a true mark of its own last launch, posting a launch another browser
    # spent: the mark names another state, so it is refused too.
    own = platform.authorize(
        start_login(thief, platform, user_id="stu-2"), user_id="stu-2", roles=[ROLE + "Learner"]
    )
    assert thief.post("/lti/launch/", own).status_code in (200, 302)
    assert SPENT_LAUNCH_COOKIE in thief.cookies
    refused = thief.post("/lti/launch/", signed)
    assert refused.status_code in (400, 403)
    assert "Location" not in refused
    thief.cookies[SPENT_LAUNCH_COOKIE] = browser.cookies[SPENT_LAUNCH_COOKIE].value[:-2] + "xx"
    forged = thief.post("/lti/launch/", signed)
    assert forged.status_code in (400, 403)
    assert "Location" not in forged


def test_a_spent_launch_s_mark_leads_nowhere_once_its_session_s_age_is_over(
    platform, settings, monkeypatch
):
    """The mark serves as long as the session the launch signed in may live: a launch posted
    again after that is refused as any spent launch is."""
    first = Client()
    launch(first, platform, user_id="stu-1")
    start(first, ResourceLink.objects.get().pk)

    browser = Client()
    signed = platform.authorize(
        start_login(browser, platform, user_id="stu-1"), user_id="stu-1", roles=[ROLE + "Learner"]
    )
    # The launch's mark signed as long ago as a session lives, and a few seconds more.
    made = int(time.time()) - settings.SESSION_COOKIE_AGE - 5
    monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda _signer: b62_encode(made))
    assert browser.post("/lti/launch/", signed).status_code == 200
    monkeypatch.undo()
    assert SPENT_LAUNCH_COOKIE in browser.cookies

    again = browser.post("/lti/launch/", signed)
    assert again.status_code in (400, 403)
    assert "Location" not in again


def test_instructor_launch_lands_on_the_dashboard(client, platform):
    response = launch(client, platform, user_id="teacher", roles=[ROLE + "Instructor"])
    placement = ResourceLink.objects.get()
    dashboard = reverse("analytics:dashboard", args=[placement.pk])
    assert urlsplit(response["Location"]).path == dashboard
    page = client.get(response["Location"]).content.decode()
    assert 'id="test-statistics"' in page
    assert reverse("assessments:manage", args=[placement.pk]) in page

    # The instructor re-points the placement's policy; learners see it.
    saved = client.post(
        reverse("assessments:manage", args=[placement.pk]),
        {
            "quiz": placement.quiz_placement.quiz.pk,
            "title": "Week 3 quiz",
            "max_attempts": "2",
            "grading_method": "last",
        },
    )
    assert saved.status_code == 302
    placement.refresh_from_db()
    assert (
        placement.title,
        placement.placement.max_attempts,
        placement.placement.grading_method,
    ) == (
        "Week 3 quiz",
        2,
        "last",
    )


def test_learner_cannot_open_the_instructor_view(client, platform):
    launch(client, platform)
    placement = ResourceLink.objects.get()
    response = client.get(reverse("assessments:manage", args=[placement.pk]))
    assert response.status_code == 403
    assert "instructors can manage this activity" in response.content.decode()


def test_invalid_settings_are_refused_with_the_form_errors(client, platform):
    launch(client, platform, roles=[ROLE + "Instructor"])
    placement = ResourceLink.objects.get()
    response = client.post(
        reverse("assessments:manage", args=[placement.pk]),
        {"quiz": "999", "title": "", "max_attempts": "-1", "grading_method": "best-of"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Select a valid choice" in html
    assert "This field is required" in html
    placement.refresh_from_db()
    assert placement.placement.max_attempts is None
    assert placement.placement.grading_method == ""


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        ([ROLE + "Learner"], Role.LEARNER),
        ([ROLE + "Instructor"], Role.STAFF),
        ([ROLE + "Learner", ROLE + "Instructor"], Role.STAFF),
        (
            ["http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"],
            Role.STAFF,
        ),
        # A sub-role's rights are its principal role's: what follows "#" names a kind of
        # that role, so a learner of the kind "Instructor" is a learner.
        ([ROLE + "Learner", SUBROLE + "Learner#Instructor"], Role.LEARNER),
        ([SUBROLE + "Learner#Instructor"], Role.LEARNER),
        ([SUBROLE + "Learner#ContentDeveloper"], Role.LEARNER),
        ([SUBROLE + "Instructor#Grader"], Role.STAFF),
        ([SUBROLE + "Instructor#PrimaryInstructor"], Role.STAFF),
        ([SUBROLE + "Mentor#Administrator"], Role.LEARNER),
        ([ROLE + "ContentDeveloper"], Role.STAFF),
        ([ROLE + "Administrator"], Role.STAFF),
        (["Instructor"], Role.STAFF),
        (["Learner"], Role.LEARNER),
        (["Learner#Instructor"], Role.LEARNER),
        (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"], Role.LEARNER),
        (["http://example.com/roles#Wizard"], Role.LEARNER),
        ([], Role.LEARNER),
    ],
    ids=[
        "learner",
        "instructor",
        "several",
        "ta-subrole",
        "learner-with-instructor-subrole",
        "instructor-subrole-of-learner-alone",
        "content-developer-subrole-of-learner",
        "grader-subrole-of-instructor",
        "primary-instructor-subrole",
        "administrator-subrole-of-mentor",
        "content-developer",
        "context-admin",
        "short-instructor",
        "short-learner",
        "short-subrole-of-learner",
        "institution-admin-only",
        "unknown",
        "empty",
    ],
)
def test_roles_decide_what_the_member_is(client, platform, roles, expected):
    response = launch(client, platform, roles=roles)
    assert response.status_code == 302
    membership = Membership.objects.get()
    assert membership.role == expected
    assert membership.roles == roles


@pytest.mark.parametrize(
    ("full_name", "email"),
    [(None, "only@example.edu"), ("Only Names", None), (None, None)],
    ids=["email-only", "names-only", "no-personal-data"],
)
def test_personal_data_is_optional(client, platform, full_name, email):
    response = launch(client, platform, full_name=full_name, email=email)
    assert response.status_code == 302
    lti_user = LtiUser.objects.get()
    assert lti_user.name == (full_name or "")
    assert lti_user.email == (email or "")


def test_personal_data_is_kept_when_a_later_launch_omits_it(client, platform):
    launch(client, platform, user_id="u")
    launch(Client(), platform, user_id="u", full_name=None, email=None)
    lti_user = LtiUser.objects.get()
    assert (lti_user.name, lti_user.email) == ("Ada Lovelace", "ada@example.edu")


def test_launch_locale_picks_the_language(client, platform):
    response = launch(client, platform, locale="ru-RU")
    page = client.get(response["Location"])
    assert "Тест на контрольные точки градиента" in page.content.decode()


def test_the_same_student_launching_again_resumes_their_attempt(client, platform):
    launch(client, platform, user_id="stu")
    placement = ResourceLink.objects.get()
    attempt = start(client, placement.pk)
    later = Client()
    launch(later, platform, user_id="stu")
    assert start(later, placement.pk).pk == attempt.pk


def test_a_session_sees_only_the_courses_it_was_launched_into(platform):
    alice = Client()
    launch(alice, platform, user_id="alice", context_id="course-A", resource_link_id="rl-A")
    course_a = ResourceLink.objects.get(resource_link_id="rl-A")
    start(alice, course_a.pk)

    # Another person launches course B in the same browser: the first one's data is gone.
    launch(alice, platform, user_id="bob", context_id="course-B", resource_link_id="rl-B")
    assert alice.get(reverse("assessments:placement", args=[course_a.pk])).status_code == 403
    mine = Attempt.objects.get(user__lti_user__sub="alice")
    assert alice.get(reverse("assessments:attempt", args=[mine.public_id])).status_code == 404
    assert Context.objects.count() == 2


def test_a_placement_created_by_deep_linking_carries_its_settings(client, platform):
    custom = {
        "activity": "quiz:gradient-checkpointing",
        "max_attempts": "3",
        "grading_method": "average",
    }
    launch(client, platform, custom=custom)
    placement = ResourceLink.objects.get()
    assert (placement.placement.max_attempts, placement.placement.grading_method) == (3, "average")


def test_a_launch_before_its_activity_is_loaded_says_how_to_load_it(client, platform, settings):
    """Nothing placed, and the page names the command of the activity's kind, not a 500."""
    settings.DEFAULT_ACTIVITY = "lab:not-loaded-here"
    response = launch(client, platform, user_id="stu-1")
    assert response.status_code == 503
    assert "Run `python manage.py load_labs`" in response.content.decode()
    assert not ResourceLink.objects.exists()


def test_a_start_while_the_quiz_has_no_version_says_how_to_load_it(client, platform):
    from assessments.models import Quiz

    launch(client, platform, user_id="stu-1")
    placement = ResourceLink.objects.get(resource_link_id="rl-1")
    Quiz.objects.update(current_version=None)
    response = client.post(reverse("assessments:start", args=[placement.pk]))
    assert response.status_code == 503
    assert "Run `python manage.py load_quiz`" in response.content.decode()
    assert not Attempt.objects.exists()
