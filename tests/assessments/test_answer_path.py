"""The answer as one statement, the checked path behind it, and the cached session user:
the fast paths of a quiz answer give the same results as the careful ones."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.html import escape

from activities.demo import enrol_demo_member
from activities.models import Grade
from activities.services import override_grade
from activities.texts import localized
from assessments import frames, selectors, services
from assessments.errors import AnswerConflict
from assessments.models import Attempt, AttemptState, Question
from lti.backends import CachedUserBackend
from ops.cache import RedisCache
from tests.quiz_helpers import (
    answer_all,
    current_form,
    launched_client,
    start,
    started_attempt,
    submit,
)
from tests.statements import page_statements
from tests.threads import hold_uncommitted


@pytest.mark.django_db
def test_an_answer_that_does_not_finish_the_attempt_and_its_page_are_one_statement(
    learner_client, placement
):
    """The answer's response is its feedback page (decision 57), which names the feedback's
    own address: the answer's statement reads the attempt for that page as it leaves it
    (decision 79), so there is no second read."""
    attempt = start(learner_client, placement.pk)
    question, option_ids = current_form(learner_client, attempt)  # the user is cached now
    with CaptureQueriesContext(connection) as queries:
        response = learner_client.post(
            reverse("assessments:answer", args=[attempt.public_id]),
            {"question": question.pk, "option": option_ids[0]},
        )
    assert response.status_code == 200
    feedback = reverse("assessments:feedback", args=[attempt.public_id, 1])
    html = response.content.decode()
    assert f'<link rel="canonical" href="{feedback}">' in html
    assert f'name="next" type="hidden" value="{feedback}"' in html  # the language switch's
    assert "data-feedback" in html
    assert "Question 2 of 8" in html
    statements = [sql.lstrip().split()[0] for sql in page_statements(queries)]
    # (the test runs in a transaction, so the statement has a savepoint around it)
    verbs = [verb for verb in statements if verb not in ("SAVEPOINT", "RELEASE")]
    assert verbs == ["WITH"]
    assert attempt.responses.get().option_id == option_ids[0]


@pytest.mark.django_db
def test_the_last_answer_s_results_page_reads_nothing_after_the_finish(learner_client, placement):
    """The answer that finishes the attempt is answered by its results page, built from the
    attempt its statement read and its finish wrote (decision 86) and from the activity's
    overview that its finish read (decision 87): after the finish's transaction the page
    reads nothing."""
    attempt = start(learner_client, placement.pk)
    address = reverse("assessments:answer", args=[attempt.public_id])
    for _ in range(attempt.max_score - 1):
        question, option_ids = current_form(learner_client, attempt)
        learner_client.post(address, {"question": question.pk, "option": option_ids[0]})
    question, option_ids = current_form(learner_client, attempt)
    with CaptureQueriesContext(connection) as queries:
        response = learner_client.post(address, {"question": question.pk, "option": option_ids[0]})
    assert response.status_code == 200
    html = response.content.decode()
    summary = reverse("assessments:summary", args=[attempt.public_id])
    assert f'<link rel="canonical" href="{summary}?answered=8">' in html
    statements = page_statements(queries)
    finish_ends = max(i for i, sql in enumerate(statements) if sql.startswith("RELEASE"))
    assert statements[finish_ends + 1 :] == []
    assert not any("a.public_id = %s" in sql for sql in statements)
    assert "Not graded yet" not in html  # the grade the finish wrote


CSRF_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


@pytest.mark.parametrize(
    ("max_attempts", "overridden"), [(3, True), (2, False)], ids=["overridden", "last-allowed"]
)
def test_the_last_answer_s_results_page_is_the_page_read_again(
    learner, learner_client, placement, max_attempts, overridden
):
    """The results page the finishing answer builds from its statement and its finish is the
    page read again afterwards, whatever the finish decided: a grade staff overrode (which
    the finish leaves), or the last attempt the policy allows (no button to start another)."""
    placement.placement.max_attempts = max_attempts
    placement.placement.grading_method = "average"
    placement.placement.save()
    answer_all(learner_client, start(learner_client, placement.pk), lambda _q: True)
    if overridden:
        teacher = User.objects.create(username="teacher")
        override_grade(
            placement=placement,
            user=learner,
            score_given=Decimal(3),
            reason="late",
            actor=teacher,
            share_reason=True,
        )
    attempt = start(learner_client, placement.pk)
    address = reverse("assessments:answer", args=[attempt.public_id])
    for _ in range(attempt.max_score):
        question, option_ids = current_form(learner_client, attempt)
        response = learner_client.post(address, {"question": question.pk, "option": option_ids[1]})
    assert response.status_code == 200
    summary = reverse("assessments:summary", args=[attempt.public_id]) + "?answered=8"
    again = learner_client.get(summary)
    answered_page = CSRF_TOKEN.sub("", response.content.decode())
    assert answered_page == CSRF_TOKEN.sub("", again.content.decode())
    assert ("late" in answered_page) is overridden
    assert ("You have used all your attempts." in answered_page) is (max_attempts == 2)


@pytest.mark.django_db
def test_the_answer_reads_the_attempt_as_its_pages_read_it(learner, placement):
    """The view the answer's statement reads for its feedback page is the view the page's
    own read gives after it, answer by answer: the attempt's every field, its course, the
    answers (the new one included) and the page that both render, in the student's language."""
    attempt = started_attempt(learner, placement)
    questions = list(attempt.quiz_version.questions.order_by("position"))

    def answer_in_russian(question: Question, right: bool) -> services.Answered:
        option = question.options.order_by("-pk").filter(is_correct=right).first()
        return submit(learner, placement, attempt, option, "ru")

    for question in questions[:-1]:
        with translation.override("ru"):
            answered = answer_in_russian(question, right=bool(question.position % 2))
            read = selectors.own_attempt_view(learner, attempt.public_id, "ru")
            shown = answered.view.question_at(question.position)
            assert frames.feedback_page(answered.view, shown, "token") == frames.feedback_page(
                read, read.question_at(question.position), "token"
            )
        made, expected = answered.view.attempt, read.attempt
        assert [getattr(made, field.attname) for field in Attempt._meta.concrete_fields] == [
            getattr(expected, field.attname) for field in Attempt._meta.concrete_fields
        ]
        assert answered.view.course == read.course
        assert answered.view._answers == read._answers
        assert len(read._answers) == question.position
        in_english = selectors.own_attempt_view(learner, attempt.public_id, "en")
        assert answered.view.title == read.title != in_english.title
    with translation.override("ru"):
        finished = answer_in_russian(questions[-1], right=True)
        assert finished == services.Answered(position=8, finished=True)
        # The finishing answer's view is the attempt as its finish left it (decision 86).
        read = selectors.own_attempt_view(learner, attempt.public_id, "ru")
        overview = selectors.placement_overview(
            user=learner, placement_id=placement.pk, language="ru", listed=0
        )
        made = finished.view
        assert frames.results_page(made, finished.overview, made.question_at(8), "token") == (
            frames.results_page(read, overview, read.question_at(8), "token")
        )
    assert finished.overview == overview
    assert [getattr(finished.overview.grade, f.attname) for f in Grade._meta.concrete_fields] == [
        getattr(overview.grade, f.attname) for f in Grade._meta.concrete_fields
    ]
    known = [f.attname for f in Attempt._meta.concrete_fields if not f.attname.startswith("is_")]
    assert [getattr(made.attempt, name) for name in known] == [
        getattr(read.attempt, name) for name in known
    ]
    assert made.attempt.state == AttemptState.FINISHED
    assert made.attempt.score == 5
    # The counted flags, which the finish set among the student's attempts, are read if asked.
    assert made.attempt.get_deferred_fields() == {"is_last_finished", "is_highest"}
    with CaptureQueriesContext(connection) as queries:
        assert (made.attempt.is_last_finished, made.attempt.is_highest) == (True, True)
    assert all('"is_' in query["sql"] for query in queries.captured_queries)
    assert made.course == read.course
    assert made._answers == read._answers


@pytest.mark.django_db
def test_the_statement_and_the_checked_path_record_the_same_attempt(placement):
    """A whole attempt through each path: the same answers, the same finished attempt, the
    same grade (the statement finishes the attempt in the last answer's transaction)."""
    now = timezone.now()
    outcomes = []
    for record in (services._record_next_answer, services._record_answer_checked):
        user = enrol_demo_member().user
        attempt = started_attempt(user, placement)
        Attempt.objects.filter(pk=attempt.pk).update(started_at=now - timedelta(seconds=90.5))
        for question in attempt.quiz_version.questions.order_by("position"):
            option = question.options.filter(is_correct=question.position % 3 == 0).first()
            answered_at = now + timedelta(seconds=question.position * 30)
            answered = record(
                services.AskedAnswer(
                    user,
                    [placement.context_id],
                    attempt.public_id,
                    question.pk,
                    option.pk,
                    answered_at,
                    "en",
                )
            )
            assert answered == services.Answered(
                position=question.position, finished=question.position == attempt.max_score
            )
        attempt.refresh_from_db()
        grade = user.activity_grades.get(placement=placement)
        outcomes.append(
            {
                "responses": list(
                    attempt.responses.order_by("question__position").values_list(
                        "question_id", "option_id", "is_correct", "answered_at", "seconds_spent"
                    )
                ),
                "attempt": (attempt.state, attempt.score, attempt.finished_at),
                "flags": (attempt.is_last_finished, attempt.is_highest),
                "grade": (grade.score_given, grade.score_maximum, grade.attempt_count),
            }
        )
    assert outcomes[0] == outcomes[1]
    # 90.5 s + 30 s rounds half up in both paths (Python's round() would give 120)
    assert [row[4] for row in outcomes[0]["responses"]] == [121] + [30] * 7
    assert outcomes[0]["attempt"] == (AttemptState.FINISHED, 2, now + timedelta(seconds=240))
    assert outcomes[0]["flags"] == (True, True)


@pytest.mark.django_db
def test_the_last_answer_is_the_statement_and_the_finish_in_one_transaction(learner, placement):
    attempt = started_attempt(learner, placement)
    questions = list(attempt.quiz_version.questions.order_by("position"))
    for question in questions:
        option = question.options.first()
        with CaptureQueriesContext(connection) as queries:
            services.submit_answer(
                user=learner,
                launched_courses=[placement.context_id],
                attempt_public_id=attempt.public_id,
                question_id=question.pk,
                option_id=option.pk,
                language="en",
            )
    statements = [query["sql"].lstrip() for query in queries.captured_queries]
    # (the test runs in a transaction: savepoints stand for BEGIN and COMMIT)
    work = [sql for sql in statements if not sql.startswith(("SAVEPOINT", "RELEASE"))]
    assert work[0].startswith("WITH")
    # The finish: the attempt's row, then the placement's grading rules in one written-out
    # read (the ORM's read of the placement with its quiz cost 1.8-2.0 ms, decision 76).
    assert work[1].startswith('UPDATE "assessments_attempt" SET "score" = ')
    assert work[2].startswith("SELECT pl.max_attempts, pl.grading_method, qz.max_attempts")
    assert not any("assessments_quizplacement" in sql for sql in work[1:] if '"lti_' in sql)
    # The checked path would look the attempt up by its public id under a lock.
    assert not any(sql.startswith("SELECT") and '."public_id" = ' in sql for sql in work)
    attempt.refresh_from_db()
    assert attempt.is_finished
    assert attempt.finished_at is not None


@pytest.mark.django_db
def test_the_last_answer_finishes_the_attempt_and_grades_it(learner, placement):
    attempt = started_attempt(learner, placement)
    for question in attempt.quiz_version.questions.order_by("position"):
        option = question.options.filter(is_correct=question.position % 2 == 1).first()
        services.submit_answer(
            user=learner,
            launched_courses=[placement.context_id],
            attempt_public_id=attempt.public_id,
            question_id=question.pk,
            option_id=option.pk,
            language="en",
        )
    attempt.refresh_from_db()
    assert attempt.is_finished
    assert attempt.score == 4
    assert attempt.is_last_finished
    assert learner.activity_grades.get(placement=placement).score_given == 4


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("position", "refusal"),
    [(1, "already answered"), (8, "This attempt is finished")],
)
@pytest.mark.usefixtures("quiz")
def test_two_answers_racing_for_one_question_record_one(position, refusal):
    """The first answer holds its row (for the last question, the finished attempt too)
    uncommitted; the second statement waits on the unique index, fails when the first
    commits, and the checked path says why."""
    membership = enrol_demo_member()
    user, placement = membership.user, membership.context.resource_links.get()
    attempt = started_attempt(user, placement)
    questions = list(attempt.quiz_version.questions.order_by("position"))

    def answer(option) -> services.Answered:
        return submit(user, placement, attempt, option)

    for earlier in questions[: position - 1]:
        answer(earlier.options.first())
    question = questions[position - 1]
    first, second = question.options.order_by("position")[:2]
    committed = hold_uncommitted(lambda: answer(first))
    with pytest.raises(AnswerConflict, match=refusal):
        answer(second)
    committed()
    assert attempt.responses.get(question=question).option_id == first.pk
    assert attempt.responses.count() == position
    assert user.activity_grades.filter(placement=placement).count() == (position == 8)
    # The same answer racing itself (a double submit): the second is the first's replay.
    if position < 8:
        following = questions[position]
        option = following.options.first()
        committed = hold_uncommitted(lambda: answer(option))
        assert answer(option) == services.Answered(position + 1, finished=False)
        committed()
        assert attempt.responses.filter(question=following).count() == 1


@pytest.mark.django_db
def test_the_session_user_comes_from_the_cache_and_leaves_it_when_saved(learner_membership):
    client = launched_client(learner_membership)
    page = reverse(
        "assessments:placement", args=[learner_membership.context.resource_links.get().pk]
    )
    assert client.get(page).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert client.get(page).status_code == 200
    assert not any('"auth_user"' in query["sql"] for query in queries.captured_queries)

    user = learner_membership.user
    user.is_active = False
    user.save()
    refused = client.get(page)
    assert refused.status_code == 403
    assert "You are not signed in" in refused.content.decode()

    user.delete()
    assert client.get(page).status_code == 403


@pytest.mark.django_db
def test_a_version_layout_is_read_once_and_in_order(quiz):
    version = quiz.current_version
    selectors._layouts.pop(version.pk, None)
    with CaptureQueriesContext(connection) as queries:
        layout = selectors.version_layout(version.pk)
        assert selectors.version_layout(version.pk) is layout
    assert len(queries.captured_queries) == 1
    questions = version.questions.order_by("position").prefetch_related("options")
    assert layout.option_ids == {
        question.pk: tuple(option.pk for option in question.options.order_by("position"))
        for question in questions
    }
    assert layout.question_count == 8
    assert layout.title == version.title
    first = questions[0]
    assert layout.questions[0].text == first.text
    assert layout.questions[0].explanation == first.explanation
    assert [o.is_correct for o in layout.questions[0].options.values()] == [
        option.is_correct for option in first.options.order_by("position")
    ]
    # A version whose questions are not visible yet is read again next time.
    assert selectors.version_layout(version.pk + 1000).question_count == 0
    assert version.pk + 1000 not in selectors._layouts


@pytest.mark.django_db
def test_a_version_s_texts_are_made_once_per_language_from_its_layout(quiz):
    version = quiz.current_version
    selectors._layouts.pop(version.pk, None)
    with CaptureQueriesContext(connection) as queries:
        english = selectors.version_texts(version.pk, "en")
        assert selectors.version_texts(version.pk, "en") is english
        russian = selectors.version_texts(version.pk, "ru")
    assert len(queries.captured_queries) == 1  # the layout's
    assert russian is not english
    first = version.questions.order_by("position").first()
    options = list(first.options.order_by("position"))
    for language, texts in (("en", english), ("ru", russian)):
        assert texts.title == localized(version.title, language)
        assert texts.questions[0].text == localized(first.text, language)
        assert texts.questions[0].explanation == localized(first.explanation, language)
        assert texts.questions[0].option_ids == [option.pk for option in options]
        assert texts.questions[0].option_texts == {
            option.pk: localized(option.text, language) for option in options
        }
        assert texts.questions[0].correct_option_ids == {o.pk for o in options if o.is_correct}
    # Dropping the layout drops its texts: the two are read again together.
    selectors._layouts.pop(version.pk, None)
    assert selectors.version_texts(version.pk, "en") is not english


@pytest.mark.django_db
def test_the_pages_of_the_answer_loop_read_no_quiz_content(learner_client, placement):
    """The question and feedback pages take the version's content from its layout (read once
    per process); each request reads only the attempt and its answers."""
    attempt = start(learner_client, placement.pk)
    question, option_ids = current_form(learner_client, attempt)
    content_tables = ("assessments_question", "assessments_option", "assessments_quizversion")
    with CaptureQueriesContext(connection) as question_page:
        page = learner_client.get(reverse("assessments:attempt", args=[attempt.public_id]))
    learner_client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": option_ids[0]},
    )
    with CaptureQueriesContext(connection) as feedback_page:
        feedback = learner_client.get(reverse("assessments:feedback", args=[attempt.public_id, 1]))
    assert page.status_code == feedback.status_code == 200
    assert localized_text(question.text) in page.content.decode()
    assert localized_text(question.explanation) in feedback.content.decode()
    read = [q["sql"] for q in question_page.captured_queries + feedback_page.captured_queries]
    assert not [sql for sql in read if any(f'"{table}"' in sql for table in content_tables)]


@pytest.mark.django_db
def test_the_summary_reads_the_attempt_the_placement_and_the_grade_in_one_statement(
    learner_client, placement
):
    """The summary shows the attempt with its answers, and the placement's rules with the
    user's attempts there and their grade, read in one statement (decision 89)."""
    attempt = start(learner_client, placement.pk)
    answer_all(learner_client, attempt, lambda question: question.position % 2 == 0)
    with CaptureQueriesContext(connection) as summary_page:
        page = learner_client.get(reverse("assessments:summary", args=[attempt.public_id]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Your score: 4 of 8" in html
    assert "Start another attempt" in html
    (statement,) = page_statements(summary_page)
    assert "activities_placement" in statement
    assert "assessments_grade" in statement


@pytest.mark.parametrize("state", ["another in progress", "overridden", "no attempt left"])
def test_the_results_read_gives_the_overview_as_its_own_read_gives_it(
    learner, learner_client, placement, state
):
    """The overview read with the attempt for its results page is the activity's overview
    as ``placement_overview`` reads it, with the grade's every field, whatever the student
    did since."""
    placement.placement.max_attempts = 2 if state == "no attempt left" else 3
    placement.placement.save()
    first = start(learner_client, placement.pk)
    answer_all(learner_client, first, lambda question: question.position < 4)
    if state != "another in progress":
        answer_all(learner_client, start(learner_client, placement.pk), lambda _q: True)
    else:
        start(learner_client, placement.pk)
    if state == "overridden":
        override_grade(
            placement=placement,
            user=learner,
            score_given=Decimal(2),
            reason="late",
            actor=User.objects.create(username="teacher"),
        )
    view, overview = selectors.own_results(learner, first.public_id, "ru")
    expected = selectors.placement_overview(
        user=learner, placement_id=placement.pk, language="ru", listed=0
    )
    assert overview == expected
    assert [getattr(overview.grade, f.attname) for f in Grade._meta.concrete_fields] == [
        getattr(expected.grade, f.attname) for f in Grade._meta.concrete_fields
    ]
    assert (overview.in_progress is not None) is (state == "another in progress")
    assert overview.can_start is (state == "overridden")
    assert overview.grade.is_overridden is (state == "overridden")
    read = selectors.own_attempt_view(learner, first.public_id, "ru")
    assert [getattr(view.attempt, f.attname) for f in Attempt._meta.concrete_fields] == [
        getattr(read.attempt, f.attname) for f in Attempt._meta.concrete_fields
    ]
    assert (view.course, view._answers) == (read.course, read._answers)


def localized_text(texts: dict[str, str]) -> str:
    return escape(texts["en"])


@pytest.mark.django_db
def test_counted_flags_follow_the_last_and_the_highest_attempt(learner, placement):
    def finished(number: int, score: int) -> Attempt:
        return Attempt.objects.create(
            user=learner,
            placement=placement,
            quiz_version=placement.quiz_placement.quiz.current_version,
            number=number,
            state=AttemptState.FINISHED,
            language="en",
            option_order={},
            score=score,
            max_score=8,
        )

    def flags() -> dict[int, tuple[bool, bool]]:
        rows = Attempt.objects.filter(user=learner).values_list(
            "number", "is_last_finished", "is_highest"
        )
        return {number: (last, highest) for number, last, highest in rows}

    def attempt_statements(statements: list[dict]) -> list[str]:
        return [s["sql"] for s in statements if "assessments_attempt" in s["sql"]]

    for number, score in ((1, 5), (2, 7), (3, 7)):
        finished(number, score)
    services.refresh_grade(user=learner, placement_id=placement.pk)
    # The highest of equal scores is the earliest.
    assert flags() == {1: (False, False), 2: (False, True), 3: (True, False)}
    with CaptureQueriesContext(connection) as queries:
        grade = services.refresh_grade(user=learner, placement_id=placement.pk)
    # One locked read of the attempts gives the flags and the grade; unchanged flags are
    # not written.
    (read,) = attempt_statements(queries.captured_queries)
    assert read.strip().startswith("SELECT")
    assert read.endswith("FOR UPDATE")
    assert grade.attempt_count == 3

    finished(4, 8)
    services.refresh_grade(user=learner, placement_id=placement.pk)
    assert flags() == {1: (False, False), 2: (False, False), 3: (False, False), 4: (True, True)}


@pytest.mark.django_db
def test_a_stale_layout_cannot_finish_an_attempt_early(learner, placement):
    """Should a version's order change under a process's cached layout, the statement still
    finishes an attempt only with the answer to its last position."""
    attempt = started_attempt(learner, placement)
    questions = list(attempt.quiz_version.questions.order_by("position"))
    assert selectors.is_last_question(questions[7].pk)  # the layout is cached now
    try:
        for question in questions[:6]:
            services.submit_answer(
                user=learner,
                launched_courses=[placement.context_id],
                attempt_public_id=attempt.public_id,
                question_id=question.pk,
                option_id=question.options.first().pk,
                language="en",
            )
        seventh, eighth = questions[6], questions[7]
        Question.objects.filter(pk=seventh.pk).update(position=100)
        Question.objects.filter(pk=eighth.pk).update(position=7)
        Question.objects.filter(pk=seventh.pk).update(position=8)
        services.submit_answer(
            user=learner,
            launched_courses=[placement.context_id],
            attempt_public_id=attempt.public_id,
            question_id=eighth.pk,  # now at position 7, still "last" to the cached layout
            option_id=eighth.options.first().pk,
            language="en",
        )
        attempt.refresh_from_db()
        assert attempt.responses.count() == 7
        assert not attempt.is_finished
    finally:
        selectors._layouts.pop(attempt.quiz_version_id, None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("quiz")
def test_a_user_deactivated_in_a_transaction_leaves_the_cache_when_it_commits():
    """A request that reads the user while the deactivation is uncommitted caches the old
    row; the commit drops it again."""
    user = enrol_demo_member().user
    backend = CachedUserBackend()
    assert backend.get_user(user.pk) == user

    def deactivate() -> None:
        user.is_active = False
        user.save()

    committed = hold_uncommitted(deactivate)
    assert backend.get_user(user.pk).is_active  # the committed row, cached again
    committed()
    assert backend.get_user(user.pk) is None


@pytest.mark.django_db
def test_without_the_cache_the_user_comes_from_the_database(learner, monkeypatch):
    unreachable = RedisCache("redis://127.0.0.1:1/0", {"OPTIONS": {"socket_connect_timeout": 0.2}})
    monkeypatch.setattr("lti.backends.cache", unreachable)
    assert CachedUserBackend().get_user(learner.pk) == learner
    learner.first_name = "Renamed"
    learner.save()  # this process's users forgotten at once
    assert CachedUserBackend().get_user(learner.pk).first_name == "Renamed"


@pytest.mark.django_db
def test_an_administrator_signs_in_with_one_password_check(client, monkeypatch):
    """The cached backend checks no passwords: a wrong one is hashed once, not once per
    listed backend, and the right one still opens the admin site."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.base_user import AbstractBaseUser

    get_user_model().objects.create_superuser("admin", "admin@example.edu", "correct horse")
    checked = []
    real_check = AbstractBaseUser.check_password

    def counted(user: AbstractBaseUser, raw: str) -> bool:
        checked.append(raw)
        return real_check(user, raw)

    monkeypatch.setattr(AbstractBaseUser, "check_password", counted)
    form = {"username": "admin", "password": "wrong", "next": "/admin/"}
    refused = client.post("/admin/login/", form)
    assert refused.status_code == 200
    assert "correct username and password" in refused.text
    assert checked == ["wrong"]

    signed_in = client.post("/admin/login/", {**form, "password": "correct horse"})
    assert signed_in.status_code == 302
    assert client.get("/admin/").status_code == 200
    assert client.session["_auth_user_backend"] == "django.contrib.auth.backends.ModelBackend"
    # Django's async sign-in does not go through authenticate(): refused there too.
    credentials = {"username": "admin", "password": "correct horse"}
    assert asyncio.run(CachedUserBackend().aauthenticate(None, **credentials)) is None


@pytest.mark.django_db(transaction=True)
def test_two_starts_at_the_same_moment_make_one_attempt(learner, placement):
    """A double click or a second tab: the start that loses the race resumes the winner's
    attempt instead of failing or making a second one."""

    def start_attempt() -> Attempt:
        return started_attempt(learner, placement)

    committed = hold_uncommitted(start_attempt)
    attempt = start_attempt()
    committed()
    assert list(Attempt.objects.filter(user=learner).values_list("pk", "number", "state")) == [
        (attempt.pk, 1, AttemptState.IN_PROGRESS)
    ]


@pytest.mark.django_db(transaction=True)
def test_a_start_is_one_read_and_its_insert(learner_client, placement):
    """Starting reads in one statement what it decides on (the access check, the rules, the
    attempts made) and inserts the attempt: no transaction round trips around them (the
    unique constraints settle a race), and no read for the new attempt's page."""
    # The activity's page first, as a student does: the user and the quiz's layout are then
    # in this process's caches, which later starts find warm.
    assert (
        learner_client.get(reverse("assessments:placement", args=[placement.pk])).status_code == 200
    )
    with CaptureQueriesContext(connection) as start_request:
        started = learner_client.post(reverse("assessments:start", args=[placement.pk]))
    assert started.status_code == 200  # answered by question 1
    verbs = [sql.split()[0] for sql in page_statements(start_request)]
    assert verbs == ["SELECT", "INSERT"]
