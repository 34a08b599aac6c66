"""The upgrade to the course side's app, on a database built by the migrations main had
before it (assessments 0006, labs 0003, lti 0003, gradesync 0001, api 0002) and filled with
real rows: every row and every link between them is still there afterwards, read through
the models' new homes: the grades in activities, and what each resource link placed, and by
which rules, in activities' Placement and the kinds' QuizPlacement and LabPlacement (the
columns lti 0005 drops from ResourceLink)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from activities import registry
from assessments.selectors import AttemptPolicy, attempt_policy
from labs.selectors import lab_policy
from lti.models import ResourceLink

BEFORE = [
    ("assessments", "0006_grades_by_the_rounding_rule"),
    ("labs", "0003_lab_reference"),
    ("lti", "0003_kept_in_database"),
    ("gradesync", "0001_initial"),
    ("api", "0002_initial"),
]


def migrate_to(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def leaves():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def fill(apps) -> dict[str, int]:
    """A course with a quiz placement (attempts, grades, an override, its audit, a regrade)
    and a lab placement (runs, a grade), and a grade sync, by the old models."""
    model = apps.get_model
    now = timezone.now()
    user = model("auth", "User").objects.create(username="student")
    teacher = model("auth", "User").objects.create(username="teacher")
    registration = model("lti", "Registration").objects.create(
        issuer="https://lms.example.edu",
        client_id="tool",
        auth_login_url="https://lms.example.edu/auth",
        auth_token_url="https://lms.example.edu/token",
        keyset_url="https://lms.example.edu/jwks",
    )
    deployment = model("lti", "Deployment").objects.create(
        registration=registration, deployment_id="1"
    )
    context = model("lti", "Context").objects.create(deployment=deployment, context_id="c1")
    quiz = model("assessments", "Quiz").objects.create(slug="q", max_attempts=3)
    version = model("assessments", "QuizVersion").objects.create(
        quiz=quiz, number=1, content_hash="h", title={"en": "Q"}, intro={}, source_language="en"
    )
    quiz.current_version = version
    quiz.save()
    question = model("assessments", "Question").objects.create(
        version=version, position=1, key="q1", source_language="en", text={}, explanation={}
    )
    option = model("assessments", "Option").objects.create(
        question=question, position=1, key="a", text={}, is_correct=True
    )
    quiz_link = model("lti", "ResourceLink").objects.create(
        context=context,
        resource_link_id="rl-quiz",
        quiz=quiz,
        max_attempts=2,
        grading_method="average",
        lineitem_url="https://lms.example.edu/lineitems/1",
    )
    attempt = model("assessments", "Attempt").objects.create(
        user=user,
        placement=quiz_link,
        quiz_version=version,
        number=1,
        state="finished",
        language="en",
        option_order={},
        finished_at=now,
        score=1,
        max_score=1,
    )
    model("assessments", "Response").objects.create(
        attempt=attempt, question=question, option=option, is_correct=True
    )
    grade = model("assessments", "Grade").objects.create(
        user=user,
        placement=quiz_link,
        score_given=Decimal("0.5"),
        score_maximum=1,
        grading_method="average",
        attempt_count=1,
        is_overridden=True,
        override_reason="by hand",
        updated_at=now,
    )
    override = model("assessments", "GradeOverride").objects.create(
        grade=grade, previous_score=1, score_given=Decimal("0.5"), reason="by hand",
        created_by=teacher,
    )  # fmt: skip
    change = model("assessments", "GradeChange").objects.create(
        grade=grade, placement=quiz_link, user=user, cause="override", previous_score=1,
        new_score=Decimal("0.5"), score_maximum=1, is_overridden=True, actor=teacher,
    )  # fmt: skip
    regrade = model("assessments", "Regrade").objects.create(
        placement=quiz_link, created_by=teacher, grades_changed=1
    )
    sync = model("gradesync", "GradeSync").objects.create(
        grade=grade, user=user, placement=quiz_link, score_given=Decimal("0.5"),
        score_maximum=1, changed_at=now, next_attempt_at=now,
    )  # fmt: skip
    lab = model("labs", "Lab").objects.create(
        slug="chain", title={"en": "Chain"}, instructions={}, blocks=4, width=8, batch=2,
        budget_bytes=1000, content_hash="h",
    )  # fmt: skip
    lab_link = model("lti", "ResourceLink").objects.create(
        context=context, resource_link_id="rl-lab", lab=lab, max_attempts=5, grading_method="last"
    )
    # A quiz placement that follows the quiz's defaults (no override of its own).
    plain_link = model("lti", "ResourceLink").objects.create(
        context=context, resource_link_id="rl-plain", quiz=quiz
    )
    model("labs", "LabSchedule").objects.create(placement=lab_link, due_at=now + timedelta(days=1))
    run = model("labs", "LabRun").objects.create(
        placement=lab_link, user=user, number=1, policy={"kind": "none"}, submitted_at=now,
        status="succeeded", next_attempt_at=now, score=Decimal("0.8"),
    )  # fmt: skip
    lab_grade = model("assessments", "Grade").objects.create(
        user=user, placement=lab_link, score_given=80, score_maximum=100,
        grading_method="highest", attempt_count=1, counted_number=1, updated_at=now,
    )  # fmt: skip
    return {
        "user": user.pk, "quiz": quiz.pk, "quiz_link": quiz_link.pk, "attempt": attempt.pk,
        "grade": grade.pk, "override": override.pk, "change": change.pk,
        "regrade": regrade.pk, "sync": sync.pk, "lab": lab.pk, "lab_link": lab_link.pk,
        "run": run.pk, "lab_grade": lab_grade.pk, "plain_link": plain_link.pk,
    }  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_keeps_every_row_and_link():
    try:
        ids = fill(migrate_to(BEFORE))
        apps = migrate_to(leaves())
    finally:
        migrate_to(leaves())  # the next tests find the schema they expect
    model = apps.get_model

    grade = model("activities", "Grade").objects.get(pk=ids["grade"])
    assert (grade.user_id, grade.placement_id) == (ids["user"], ids["quiz_link"])
    assert grade.score_given == Decimal("0.5")
    assert grade.is_overridden
    assert grade.override_reason == "by hand"
    assert grade.grading_method == "average"
    override = model("activities", "GradeOverride").objects.get(pk=ids["override"])
    assert override.grade_id == ids["grade"]
    assert override.reason == "by hand"
    change = model("activities", "GradeChange").objects.get(pk=ids["change"])
    assert (change.grade_id, change.placement_id) == (ids["grade"], ids["quiz_link"])
    assert model("activities", "Regrade").objects.get(pk=ids["regrade"]).grades_changed == 1
    sync = model("gradesync", "GradeSync").objects.get(pk=ids["sync"])
    assert sync.grade_id == ids["grade"]
    assert sync.grade.score_given == Decimal("0.5")
    assert sync.lease_until is None  # renamed from claimed_until (gradesync 0003)

    quiz_link = model("lti", "ResourceLink").objects.get(pk=ids["quiz_link"])
    assert quiz_link.lineitem_url == "https://lms.example.edu/lineitems/1"
    assert list(quiz_link.grades.values_list("pk", flat=True)) == [ids["grade"]]
    attempt = model("assessments", "Attempt").objects.get(pk=ids["attempt"])
    assert attempt.placement_id == ids["quiz_link"]
    assert attempt.responses.count() == 1

    lab_grade = model("activities", "Grade").objects.get(pk=ids["lab_grade"])
    assert lab_grade.placement_id == ids["lab_link"]
    assert lab_grade.score_given == 80
    run = model("labs", "LabRun").objects.get(pk=ids["run"])
    assert run.placement_id == ids["lab_link"]
    assert run.score == Decimal("0.8")
    assert model("labs", "LabSchedule").objects.get(placement_id=ids["lab_link"]).due_at

    # What each link placed, and its policy, moved to the course side and the kinds.
    placements = model("activities", "Placement").objects
    policies = {
        row.resource_link_id: (row.kind, row.max_attempts, row.grading_method)
        for row in placements.all()
    }
    assert policies == {
        ids["quiz_link"]: ("quiz", 2, "average"),
        ids["lab_link"]: ("lab", 5, "last"),
        ids["plain_link"]: ("quiz", None, ""),
    }
    quiz_rows = model("assessments", "QuizPlacement").objects.values_list("pk", "quiz_id")
    assert dict(quiz_rows) == {ids["quiz_link"]: ids["quiz"], ids["plain_link"]: ids["quiz"]}
    lab_rows = model("labs", "LabPlacement").objects.values_list("pk", "lab_id")
    assert dict(lab_rows) == {ids["lab_link"]: ids["lab"]}
    assert model("lti", "ResourceLink").objects.get(pk=ids["lab_link"]).lab_runs.count() == 1
    link_columns = {field.name for field in model("lti", "ResourceLink")._meta.get_fields()}
    assert not link_columns & {"quiz", "lab", "max_attempts", "grading_method"}
    # The code reads the upgraded rows: each link's kind, activity and rules in force.
    links = ResourceLink.objects.select_related("placement")
    quiz_link, lab_link, plain_link = (
        links.get(pk=ids[name]) for name in ("quiz_link", "lab_link", "plain_link")
    )
    assert [registry.kind_of(link).key for link in (quiz_link, lab_link, plain_link)] == [
        "quiz",
        "lab",
        "quiz",
    ]
    assert registry.slug(quiz_link) == "q"
    assert registry.slug(lab_link) == "chain"
    assert attempt_policy(quiz_link) == AttemptPolicy(max_attempts=2, grading_method="average")
    assert attempt_policy(plain_link) == AttemptPolicy(max_attempts=3, grading_method="highest")
    lab_rules = lab_policy(lab_link)
    assert (lab_rules.max_runs, lab_rules.grading_method) == (5, "last")

    # The admin's permissions follow the grade models to their new app.
    content_types = model("contenttypes", "ContentType").objects
    assert not content_types.filter(app_label="assessments", model="grade").exists()
