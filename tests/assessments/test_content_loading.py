"""Loading content is idempotent; an edit makes a new version and started attempts keep theirs."""

from __future__ import annotations

import dataclasses
import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from assessments.content import SEED_QUIZ_FILE
from assessments.models import Option, Question, Quiz, QuizVersion
from assessments.services import load_quiz
from labs.models import Lab
from tests.admin_forms import unchanged_form_data
from tests.db_refusal import refuse_inserts
from tests.quiz_helpers import answer_all, current_form, start

pytestmark = pytest.mark.django_db


def edited_seed(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(SEED_QUIZ_FILE.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def test_loading_the_same_file_twice_changes_nothing():
    out = StringIO()
    call_command("load_quiz", stdout=out)
    call_command("load_quiz", stdout=out)
    assert "loaded as new version 1" in out.getvalue()
    assert "unchanged, current is version 1" in out.getvalue()
    assert QuizVersion.objects.count() == 1
    assert Question.objects.count() == 8
    assert Option.objects.count() == 32


def test_an_edit_is_a_new_version_and_started_attempts_keep_what_they_answered_against(
    learner_client, placement, tmp_path
):
    attempt = start(learner_client, placement.pk)
    old_question, _ = current_form(learner_client, attempt)
    old_text = old_question.text["en"]

    def edit(data):
        question = data["questions"][0]
        question["text"]["en"] = "Edited: what does checkpointing trade?"
        # Move the key: the old right option is now wrong.
        for option in question["options"]:
            option["correct"] = option["key"] == "b"

    call_command("load_quiz", str(edited_seed(tmp_path, edit)), stdout=StringIO())
    quiz = Quiz.objects.get()
    assert quiz.current_version.number == 2
    attempt.refresh_from_db()
    assert attempt.quiz_version.number == 1

    # The attempt in progress still shows and grades the version-1 question and key.
    page = learner_client.get(reverse("assessments:attempt", args=[attempt.public_id]))
    assert escape(old_text) in page.content.decode()
    summary = answer_all(learner_client, attempt, lambda _q: True)
    assert "Your score: 8 of 8" in summary

    # A new attempt uses the edited version.
    fresh = start(learner_client, placement.pk)
    assert fresh.quiz_version.number == 2
    page = learner_client.get(reverse("assessments:attempt", args=[fresh.public_id]))
    assert "Edited: what does checkpointing trade?" in page.content.decode()
    new_key = fresh.quiz_version.questions.get(position=1).options.get(is_correct=True)
    assert new_key.key == "b"


def test_reloading_an_earlier_content_makes_that_version_current_again(seed_content):
    first = load_quiz(seed_content).version
    changed = dataclasses.replace(seed_content, intro={"en": "Changed.", "ru": "Изменено."})
    second = load_quiz(changed).version
    again = load_quiz(seed_content)
    assert second.number == 2
    assert again.version == first
    assert not again.created
    assert Quiz.objects.get().current_version == first
    assert QuizVersion.objects.count() == 2


def test_an_invalid_file_is_refused_and_nothing_is_stored(tmp_path):
    def edit(data):
        data["questions"][3]["options"][0]["correct"] = True  # a second right answer

    with pytest.raises(CommandError, match=r"questions\[4\]: exactly one option"):
        call_command("load_quiz", str(edited_seed(tmp_path, edit)), stdout=StringIO())
    assert not Quiz.objects.exists()


@pytest.mark.parametrize("pointed_at", ["none", "another quiz's version"])
def test_the_admin_cannot_point_a_quiz_at_content_it_did_not_load(
    admin_client, learner_client, placement, quiz, seed_content, pointed_at
):
    """Found by review: the quiz's admin form offered its current version as an optional
    choice of every version. Cleared, the quiz's results pages failed with a server error;
    pointed at another quiz's version, new attempts would be asked another quiz's questions.
    Versions come from loading content (load_quiz), and the form only shows which is current."""
    attempt = start(learner_client, placement.pk)
    answer_all(learner_client, attempt, lambda _question: True)
    other = load_quiz(dataclasses.replace(seed_content, slug="another-quiz")).quiz
    version = quiz.current_version_id
    chosen = "" if pointed_at == "none" else other.current_version_id

    change_page = reverse("admin:assessments_quiz_change", args=[quiz.pk])
    assert admin_client.get(change_page).status_code == 200  # shown
    admin_client.post(
        change_page,
        {
            "slug": quiz.slug,
            "current_version": chosen,
            "max_attempts": 0,
            "grading_method": "highest",
        },
    )

    quiz.refresh_from_db()
    assert quiz.current_version_id == version
    results = learner_client.get(reverse("assessments:summary", args=[attempt.public_id]))
    assert results.status_code == 200
    assert "8 / 8" in results.content.decode()


WORDING_FIELDS = [
    pytest.param(Question, "text", id="question"),
    pytest.param(QuizVersion, "intro", id="version"),
    pytest.param(Lab, "instructions", id="lab"),
]


@pytest.mark.parametrize(
    ("typed", "refusal"),
    [
        ('"What does activation checkpointing trade?"', "needs a text for each of en, ru"),
        ('{"en": "Only English"}', "needs a text for each of en, ru"),
        ('{"en": "A NUL\\u0000 here", "ru": "Текст"}', "contains a NUL character"),
    ],
)
@pytest.mark.parametrize(("model", "field"), WORDING_FIELDS)
def test_wording_corrected_in_the_admin_keeps_a_text_for_each_language(
    admin_client, admin_user, learner_client, placement, model, field, typed, refusal
):
    """Found by review: a question's wording typed in the admin as the text itself (JSON,
    but not a text per language) was saved, and every page showing the question then failed
    with a server error; so with a version's title or introduction and a lab's wording. The
    admin checks them as a content file's are, and says what is wrong."""
    from tests.labs_helpers import small_lab

    row = {
        Question: lambda: (
            Question.objects.filter(version__quiz__slug="gradient-checkpointing")
            .order_by("position")
            .first()
        ),
        QuizVersion: lambda: QuizVersion.objects.get(quiz__slug="gradient-checkpointing"),
    }.get(model, small_lab)()
    before = getattr(row, field)
    change_page = reverse(
        f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[row.pk]
    )

    refused = admin_client.post(
        change_page, unchanged_form_data(admin_user, model, row) | {field: typed}
    )

    assert refused.status_code == 200
    assert refusal in refused.content.decode()
    row.refresh_from_db()
    assert getattr(row, field) == before
    corrected = json.dumps(before | {"en": "Corrected."})
    saved = admin_client.post(
        change_page, unchanged_form_data(admin_user, model, row) | {field: corrected}
    )
    assert saved.status_code == 302
    row.refresh_from_db()
    assert getattr(row, field) == before | {"en": "Corrected."}
    if model is not Lab:  # the quiz's pages show it
        started = learner_client.post(reverse("assessments:start", args=[placement.pk]))
        assert started.status_code == 200


def test_versions_are_not_added_in_the_admin(admin_user, quiz):  # noqa: ARG001
    """Found by review: the version admin's add form saved a version without a quiz or a
    number, a server error. Versions come from loading content (load_quiz)."""
    admin = Client(raise_request_exception=False)
    admin.force_login(admin_user)
    response = admin.post(
        reverse("admin:assessments_quizversion_add"),
        {
            "title": '{"en": "A version", "ru": "Версия"}',
            "intro": '{"en": "Intro", "ru": "Введение"}',
            "source_language": "en",
            "questions-TOTAL_FORMS": 0,
            "questions-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 403
    assert QuizVersion.objects.count() == 1


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda data: data["questions"][-1].update(key="q" * 33), r"questions\[8\]: .*32"),
        (
            lambda data: data["questions"][0]["options"][0].update(key="o" * 33),
            r"questions\[1\]\.options\[1\]: .*32",
        ),
        (lambda data: data.update(slug="not a slug"), r"slug: must be a slug"),
        (
            lambda data: data["questions"][1]["text"].update(en="Why\x00?"),
            r"questions\[2\]\.text\.en: contains a NUL character",
        ),
        (lambda data: data.update(slug="s" * 101), r"slug: .*at most 100 characters"),
    ],
)
def test_a_key_or_slug_the_database_cannot_hold_is_refused_with_where(tmp_path, edit, message):
    """Found by review: a question key over 32 characters passed the file's checks and met
    the database's limit as a traceback; the keys' and slug's limits are the file's rules,
    and so is PostgreSQL's refusal of NUL in text."""
    path = edited_seed(tmp_path, edit)
    with pytest.raises(CommandError, match=message):
        call_command("load_quiz", str(path), stdout=StringIO())
    assert not Quiz.objects.exists()


def test_the_files_limits_are_the_databases():
    from django.db.backends.base.operations import BaseDatabaseOperations

    from activities.content import SLUG_MAX_LENGTH
    from assessments.content import KEY_MAX_LENGTH
    from labs.content import BIGINT_MAX, INT_MAX
    from labs.models import Lab

    for name, maximum in (("max_runs", INT_MAX), ("budget_bytes", BIGINT_MAX), ("seed", INT_MAX)):
        field = Lab._meta.get_field(name)
        ranges = BaseDatabaseOperations.integer_field_ranges  # PostgreSQL's, the SQL standard's
        assert ranges[field.get_internal_type()][1] == maximum

    assert Question._meta.get_field("key").max_length == KEY_MAX_LENGTH
    assert Option._meta.get_field("key").max_length == KEY_MAX_LENGTH
    assert Quiz._meta.get_field("slug").max_length == SLUG_MAX_LENGTH
    assert Lab._meta.get_field("slug").max_length == SLUG_MAX_LENGTH


def test_a_quiz_the_database_refuses_midway_is_a_command_error_and_loads_nothing():
    """The file's checks hold the columns' limits; a refusal they did not foresee (here a
    trigger of the database's own, on the quiz's last question) is a message, not a
    traceback, and the quiz is not half-loaded."""
    refuse_inserts("assessments_question", "key", "q8")
    with pytest.raises(CommandError, match="the database refused the quiz; not loaded"):
        call_command("load_quiz", stdout=StringIO())
    assert not Quiz.objects.exists()
    assert not Question.objects.exists()


def test_quizzes_and_labs_are_not_added_in_the_admin(admin_user):
    """Their content comes from their files: an activity added in the admin had no version
    (a quiz) or a model and budget that no file or reference stood behind (a lab)."""
    admin = Client(raise_request_exception=False)
    admin.force_login(admin_user)
    for model in ("assessments_quiz", "labs_lab"):
        add = reverse(f"admin:{model}_add")
        assert admin.get(add).status_code == 403
        assert admin.post(add, {"slug": "added", "max_attempts": 0}).status_code == 403
    assert not Quiz.objects.exists()
    assert not Lab.objects.exists()
