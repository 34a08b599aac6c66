"""The instructor's gradebook: grading rules that regrade at once, overrides and regrades
from the grades page (audited, synced), and one number for a grade on every page, in the
API, in CSV and in the LMS (the fake LMS is a real HTTP server)."""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from activities.models import ChangeCause, Grade, GradeChange, Regrade
from assessments.services import load_quiz
from gradesync import services as sync_services
from gradesync.models import GradeSync, SyncState
from labs.models import LabRun, LabSchedule, RunStatus
from labs.services import refresh_lab_grade
from lti.models import Membership, Role
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.labs_helpers import small_lab
from tests.quiz_helpers import launched_client

pytestmark = pytest.mark.django_db


def deliver_pending() -> list[str]:
    """Deliver every pending change, oldest first (as the worker would)."""
    return [
        sync_services.deliver(pk)
        for pk in GradeSync.objects.filter(state=SyncState.PENDING)
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    ]


def posted(lms, placement, sub: str) -> float:
    return lms.scores[(lms.lineitem_id(placement.lineitem_url), sub)]["scoreGiven"]


def staff(placement, sub: str):
    user = student(placement, sub)
    Membership.objects.filter(user=user).update(role=Role.STAFF)
    return user


def client_of(user):
    return launched_client(user.lti_memberships.get())


def grade_of(user, placement) -> Grade:
    return Grade.objects.get(user=user, placement=placement)


def settings_form(placement, **changes) -> dict:
    return {
        "quiz": placement.quiz_placement.quiz_id,
        "title": placement.title,
        "max_attempts": 0,
        "grading_method": "highest",
        **changes,
    }


@pytest.fixture
def synced_placement(fake_lms, quiz):
    return graded_placement(fake_lms, quiz)


def test_a_grading_method_change_regrades_at_once_in_the_tool_and_the_lms(
    synced_placement, fake_lms
):
    """Finding 1: 6/8 then 4/8 under "highest" is 6; "last" makes it 4 at once, "first" 6,
    "average" 5, and a limit of one attempt 6 again: in the tool, on her page and in the LMS,
    with one delivery per change and none for the student whose grade did not move."""
    her = student(synced_placement, "her")
    other = student(synced_placement, "other")
    teacher = staff(synced_placement, "teacher")
    finish_attempt(her, synced_placement, correct=6)
    finish_attempt(her, synced_placement, correct=4)
    finish_attempt(other, synced_placement, correct=3)
    assert deliver_pending() == ["synced", "synced"]
    assert grade_of(her, synced_placement).score_given == 6
    assert posted(fake_lms, synced_placement, "her") == 6.0

    instructor, learner = client_of(teacher), client_of(her)
    manage = reverse("assessments:manage", args=[synced_placement.pk])
    steps = [
        ({"grading_method": "last"}, Decimal(4), "4.00 / 8.00 (50.00%)"),
        ({"grading_method": "first"}, Decimal(6), "6.00 / 8.00 (75.00%)"),
        ({"grading_method": "average"}, Decimal(5), "5.00 / 8.00 (62.50%)"),
        ({"grading_method": "average", "max_attempts": 1}, Decimal(6), "6.00 / 8.00 (75.00%)"),
    ]
    for changes, expected, shown in steps:
        syncs = GradeSync.objects.count()
        page = instructor.post(manage, settings_form(synced_placement, **changes), follow=True)
        assert page.status_code == 200
        assert "recomputed by the new rules: 1 grade changed" in page.content.decode()
        assert grade_of(her, synced_placement).score_given == expected
        assert grade_of(other, synced_placement).score_given == 3
        assert GradeSync.objects.count() == syncs + 1  # only her changed grade goes out
        assert deliver_pending() == ["synced"]
        assert posted(fake_lms, synced_placement, "her") == float(expected)
        html = learner.get(
            reverse("assessments:placement", args=[synced_placement.pk])
        ).content.decode()
        assert shown in html, changes
        change = GradeChange.objects.filter(user=her).first()
        assert (change.cause, change.new_score, change.actor) == (
            ChangeCause.SETTINGS,
            expected,
            teacher,
        )
    assert posted(fake_lms, synced_placement, "other") == 3.0
    assert grade_of(her, synced_placement).attempt_count == 1  # the one attempt the limit allows

    # A save that changes no rule recomputes nothing and sends nothing.
    syncs = GradeSync.objects.count()
    same = settings_form(
        synced_placement, grading_method="average", max_attempts=1, title="Renamed"
    )
    page = instructor.post(manage, same, follow=True)
    assert "recomputed" not in page.content.decode()
    assert GradeSync.objects.count() == syncs

    # The API's regrade follows the current method too: nothing is left to change.
    body = instructor.post(
        "/api/v1/regrades/", {"placement": synced_placement.pk}, content_type="application/json"
    ).json()
    assert (body["grades_changed"], body["attempts_changed"]) == (0, 0)


def test_the_api_regrade_applies_a_method_changed_behind_its_back(synced_placement, fake_lms):
    her = student(synced_placement, "her")
    teacher = staff(synced_placement, "teacher")
    finish_attempt(her, synced_placement, correct=6)
    finish_attempt(her, synced_placement, correct=4)
    synced_placement.placement.grading_method = (
        "last"  # as an old deploy (or the admin) left it: not regraded
    )
    synced_placement.placement.save(update_fields=["grading_method"])
    response = client_of(teacher).post(
        "/api/v1/regrades/", {"placement": synced_placement.pk}, content_type="application/json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["grades_changed"] == 1
    assert body["cause"] == "regrade"
    assert body["grades_report"] == [
        {
            "user_id": her.pk,
            "name": "lti-her",
            "old_score": "6.00",
            "new_score": "4.00",
            "score_maximum": "8.00",
        }
    ]
    deliver_pending()
    assert posted(fake_lms, synced_placement, "her") == 4.0


@pytest.mark.usefixtures("client")
def test_override_and_its_clearing_from_the_grades_page(synced_placement, fake_lms):
    her = student(synced_placement, "her")
    teacher = staff(synced_placement, "teacher")
    finish_attempt(her, synced_placement, correct=6)
    deliver_pending()
    instructor, learner = client_of(teacher), client_of(her)
    grades = reverse("gradebook:grades", args=[synced_placement.pk])

    response = instructor.post(
        reverse("gradebook:override", args=[synced_placement.pk]),
        {
            "user": her.pk,
            "score_given": "7.5",
            "reason": "Question 4 was ambiguous",
            "share_reason": "on",
            "sort": "-grade",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"{grades}?sort=-grade"
    grade = grade_of(her, synced_placement)
    assert (grade.score_given, grade.is_overridden, grade.override_reason_shared) == (
        Decimal("7.5"),
        True,
        True,
    )
    assert deliver_pending() == ["synced"]
    assert posted(fake_lms, synced_placement, "her") == 7.5

    page = instructor.get(grades).content.decode()
    row = re.search(rf'<tr id="student-{her.pk}" class="overridden">.*?</tr>', page, re.S)
    assert row, page
    assert "7.50 / 8.00" in row.group(0)
    assert "overridden" in row.group(0)
    assert "Set by an instructor: Question 4 was ambiguous" in row.group(0)
    mine = learner.get(
        reverse("assessments:placement", args=[synced_placement.pk])
    ).content.decode()
    assert "7.50 / 8.00" in mine
    assert "set by your instructor" in mine
    assert "Reason: Question 4 was ambiguous" in mine
    api = instructor.get(f"/api/v1/grades/?placement={synced_placement.pk}").json()["results"]
    assert [(g["score_given"], g["is_overridden"], g["override_reason"]) for g in api] == [
        ("7.50", True, "Question 4 was ambiguous")
    ]
    csv_rows = export(instructor, synced_placement, "grades")
    assert [(r["score_given"], r["is_overridden"], r["override_reason"]) for r in csv_rows] == [
        ("7.50", "True", "Question 4 was ambiguous")
    ]

    # A new attempt no longer moves it; the override stays.
    finish_attempt(her, synced_placement, correct=8)
    assert grade_of(her, synced_placement).score_given == Decimal("7.5")
    assert not GradeSync.objects.filter(state=SyncState.PENDING).exists()

    # A reason not shared stays with the staff.
    instructor.post(
        reverse("gradebook:override", args=[synced_placement.pk]),
        {"user": her.pk, "score_given": "7.25", "reason": "Late work"},
    )
    mine = learner.get(
        reverse("assessments:placement", args=[synced_placement.pk])
    ).content.decode()
    assert "set by your instructor" in mine
    assert "Late work" not in mine

    response = instructor.post(
        reverse("gradebook:clear-override", args=[synced_placement.pk]), {"user": her.pk}
    )
    assert response.status_code == 302
    grade = grade_of(her, synced_placement)
    assert (grade.score_given, grade.is_overridden, grade.counted_number) == (8, False, 2)
    assert deliver_pending() == ["synced", "synced"]
    assert posted(fake_lms, synced_placement, "her") == 8.0
    mine = learner.get(
        reverse("assessments:placement", args=[synced_placement.pk])
    ).content.decode()
    assert "set by your instructor" not in mine
    assert "8.00 / 8.00" in mine

    audit = list(GradeChange.objects.filter(user=her).order_by("created_at", "pk"))
    assert [
        (a.cause, a.previous_score, a.new_score, a.was_overridden, a.is_overridden, a.actor)
        for a in audit
    ] == [
        (ChangeCause.OVERRIDE, Decimal(6), Decimal("7.5"), False, True, teacher),
        (ChangeCause.OVERRIDE, Decimal("7.5"), Decimal("7.25"), True, True, teacher),
        (ChangeCause.OVERRIDE_CLEARED, Decimal("7.25"), Decimal(8), True, False, teacher),
    ]
    assert audit[0].reason == "Question 4 was ambiguous"
    assert audit[0].created_at
    history = instructor.get(grades).content.decode()
    assert 'id="grade-changes"' in history
    assert "Override cleared" in history


def export(client, placement, kind: str) -> list[dict]:
    response = client.get(f"/dashboard/{placement.pk}/{kind}.csv")
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize(
    ("form", "message", "status"),
    [
        ({"score_given": "9", "reason": "x"}, "between 0 and 8", 400),
        ({"score_given": "-1", "reason": "x"}, "Grade:", 400),
        ({"score_given": "abc", "reason": "x"}, "Grade:", 400),
        ({"score_given": "7.125", "reason": "x"}, "Grade:", 400),
        ({"score_given": "7", "reason": "   "}, "Reason:", 400),
        ({"score_given": "7", "reason": "x", "user": "999999"}, "No such student", 404),
        ({"score_given": "7", "reason": "x", "user": "x"}, "Enter a whole number", 400),
    ],
)
def test_bad_overrides_from_the_page_say_what_is_wrong(synced_placement, form, message, status):
    her = student(synced_placement, "her")
    teacher = staff(synced_placement, "teacher")
    response = client_of(teacher).post(
        reverse("gradebook:override", args=[synced_placement.pk]), {"user": her.pk, **form}
    )
    assert response.status_code == status
    assert message in response.content.decode()
    assert not Grade.objects.exists()
    assert not GradeChange.objects.exists()


def test_only_the_courses_staff_see_and_change_grades(synced_placement):
    her = student(synced_placement, "her")
    finish_attempt(her, synced_placement, correct=5)
    learner = client_of(her)
    for name, method in (
        ("grades", "get"),
        ("regrade", "get"),
        ("regrade", "post"),
        ("override", "post"),
        ("clear-override", "post"),
    ):
        response = getattr(learner, method)(
            reverse(f"gradebook:{name}", args=[synced_placement.pk]),
            {"user": her.pk, "score_given": "8", "reason": "mine"},
        )
        assert response.status_code == 403, name
    assert grade_of(her, synced_placement).score_given == 5
    assert not Regrade.objects.exists()
    # Staff of another course cannot reach this one's grades page.
    from lti.models import Context

    other = Context.objects.create(
        deployment=synced_placement.context.deployment, context_id="other"
    )
    stranger = student(synced_placement, "stranger")
    Membership.objects.filter(user=stranger).update(context=other, role=Role.STAFF)
    assert (
        client_of(stranger).get(reverse("gradebook:grades", args=[synced_placement.pk])).status_code
        == 403
    )


def change_key(seed_content) -> None:
    """The key of q1 changes: option b becomes the right answer."""
    q1 = seed_content.questions[0]
    options = tuple(dataclasses.replace(o, correct=o.key == "b") for o in q1.options)
    load_quiz(
        dataclasses.replace(
            seed_content,
            questions=(dataclasses.replace(q1, options=options), *seed_content.questions[1:]),
        )
    )


def test_the_regrade_preview_is_what_the_regrade_does(synced_placement, fake_lms, seed_content):
    students = [student(synced_placement, f"s{n}") for n in range(4)]
    teacher = staff(synced_placement, "teacher")
    for number, user in enumerate(students):
        finish_attempt(user, synced_placement, correct=number + 3)
    instructor = client_of(teacher)
    # One overridden grade: the preview says it stays, and the regrade keeps it.
    instructor.post(
        reverse("gradebook:override", args=[synced_placement.pk]),
        {"user": students[3].pk, "score_given": "8", "reason": "Bonus"},
    )
    deliver_pending()
    change_key(seed_content)

    page = instructor.get(reverse("gradebook:regrade", args=[synced_placement.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    fingerprint = re.search(r'name="fingerprint" value="(\w+)"', html).group(1)
    shown = {
        int(user): (before, after)
        for user, before, after in re.findall(
            r'<tr data-user="(\d+)"><th scope="row">[^<]*</th><td>([^<]*)</td><td>([^<]*)</td>',
            html,
        )
    }
    preview = instructor.post(
        "/api/v1/regrades/",
        {"placement": synced_placement.pk, "preview": True},
        content_type="application/json",
    ).json()
    assert preview["fingerprint"] == fingerprint
    assert not Regrade.objects.exists()  # a preview writes nothing

    response = instructor.post(
        reverse("gradebook:regrade", args=[synced_placement.pk]), {"fingerprint": fingerprint}
    )
    assert response.status_code == 302
    regrade = Regrade.objects.get()
    # Every attempt answered under the old key lost q1's point; exactly the previewed ones.
    assert regrade.report == preview["report"], regrade.report
    assert regrade.attempts_changed == preview["attempts_changed"] == 4
    done = {row["user_id"]: (row["old_score"], row["new_score"]) for row in regrade.grades_report}
    expected = {
        row["user_id"]: (row["old_score"], row["new_score"])
        for row in preview["grades_report"]
        if not row["overridden"]
    }
    assert done == expected
    assert len(done) == 3 == regrade.grades_changed
    assert shown[students[0].pk] == ("3.00", "2.00 / 8.00")
    assert "overridden: stays" in shown[students[3].pk][1]
    assert grade_of(students[3], synced_placement).score_given == 8
    assert len(deliver_pending()) == 3
    for user in students[:3]:
        assert posted(fake_lms, synced_placement, user.lti_user.sub) == float(
            grade_of(user, synced_placement).score_given
        )

    # A preview that no longer holds is refused, and nothing is written.
    synced_placement.placement.grading_method = "first"
    synced_placement.placement.save(update_fields=["grading_method"])
    stale = instructor.post(
        reverse("gradebook:regrade", args=[synced_placement.pk]), {"fingerprint": fingerprint}
    )
    assert stale.status_code == 409
    assert "changed since the preview" in stale.content.decode()
    assert Regrade.objects.count() == 1
    api_stale = instructor.post(
        "/api/v1/regrades/",
        {"placement": synced_placement.pk, "expected": fingerprint},
        content_type="application/json",
    )
    assert api_stale.status_code == 409
    assert Regrade.objects.count() == 1


LAB_RESULT = {
    "peak_activation_bytes": 3080,
    "budget_bytes": 3592,
    "baseline_peak_activation_bytes": 4616,
    "recompute_flops": 4096,
    "forward_flops": 16384,
    "optimal_recompute_flops": 3456,
    "grads_match": True,
    "within_budget": True,
    "device": "cpu",
}


# A due time an hour ago, to the minute (as the manage page's form shows and posts it back).
DUE_AT = timezone.now().replace(second=0, microsecond=0) - timedelta(hours=1)


def measured(placement, user, score: str, *, number: int = 1, late: bool = False) -> LabRun:
    """A measured run before the due time, or after it (the placement is then due at
    DUE_AT): lateness is derived from the due time in force."""
    if late:
        LabSchedule.objects.update_or_create(placement=placement, defaults={"due_at": DUE_AT})
    run = LabRun.objects.create(
        placement=placement,
        user=user,
        number=number,
        policy={"kind": "sqrt"},
        submitted_at=DUE_AT + timedelta(minutes=number if late else number - 10),
        next_attempt_at=timezone.now(),
        status=RunStatus.SUCCEEDED,
        score=Decimal(score),
        device="cpu",
        result={**LAB_RESULT, "score": float(score)},
    )
    refresh_lab_grade(user=user, placement=placement)
    return run


def test_one_number_for_a_grade_on_pages_in_the_api_in_csv_and_in_the_lms(fake_lms, quiz):
    """Finding 3: a lab run of 0.8438 is 84.38 on the run page, the lab page, the grades
    page, in the API, in CSV and in the LMS; in Russian 84,38. A late run of 0.8437 with a
    50% penalty is 42.185, rounded half up: 42.19 everywhere. A quiz average of 1, 2 and 2
    out of 8 is 1.67. 2/3 shows 66.67%, not 66.6%."""
    lab = small_lab()
    placement = graded_placement(fake_lms, lab)
    # Placing the lab gave it a schedule with the lab's defaults; the course sets a penalty.
    LabSchedule.objects.filter(placement=placement).update(
        late_policy="penalty", late_penalty_percent=50
    )
    on_time, late = student(placement, "on-time"), student(placement, "late")
    teacher = staff(placement, "teacher")
    run = measured(placement, on_time, "0.8438")
    measured(placement, late, "0.8437", late=True)
    third = student(placement, "third")
    two_thirds = measured(placement, third, "0.6667")
    deliver_pending()
    instructor = client_of(teacher)

    for user, value, comma in ((on_time, "84.38", "84,38"), (late, "42.19", "42,19")):
        assert grade_of(user, placement).score_given == Decimal(value)
        assert f"{posted(fake_lms, placement, user.lti_user.sub):.15g}" == value
        lab_page = client_of(user).get(reverse("labs:placement", args=[placement.pk]))
        assert f"{value} / 100.00" in lab_page.content.decode()
        russian = client_of(user)
        russian.post(reverse("set_language"), {"language": "ru", "next": "/"})
        ru_page = russian.get(reverse("labs:placement", args=[placement.pk])).content.decode()
        assert f"{comma} / 100,00" in ru_page
        ru_grades = client_of(teacher)
        ru_grades.post(reverse("set_language"), {"language": "ru", "next": "/"})
        assert (
            f"{comma} / 100,00"
            in ru_grades.get(reverse("gradebook:grades", args=[placement.pk])).content.decode()
        )
    run_page = client_of(on_time).get(reverse("labs:run", args=[run.public_id])).content.decode()
    assert re.search(r'<dd id="score">84\.38%', run_page)
    third_page = client_of(third).get(reverse("labs:run", args=[two_thirds.public_id]))
    assert re.search(r'<dd id="score">66\.67%', third_page.content.decode())
    grades_page = instructor.get(reverse("gradebook:grades", args=[placement.pk])).content
    assert b"84.38 / 100.00" in grades_page
    assert b"42.19 / 100.00" in grades_page
    api = {
        row["user"]["id"]: row["score_given"]
        for row in instructor.get(f"/api/v1/grades/?placement={placement.pk}").json()["results"]
    }
    assert api[on_time.pk] == "84.38"
    assert api[late.pk] == "42.19"
    by_user = {int(row["user_id"]): row for row in export(instructor, placement, "grades")}
    assert by_user[on_time.pk]["score_given"] == "84.38"
    assert by_user[late.pk]["score_given"] == "42.19"
    runs = {row["run"]: row for row in export(instructor, placement, "runs")}
    assert runs[str(run.public_id)]["score_percent"] == "84.38"
    assert runs[str(two_thirds.public_id)]["score_percent"] == "66.67"

    # The quiz: an average of 1, 2 and 2 out of 8.
    synced_placement = graded_placement_in(placement, quiz)
    synced_placement.placement.grading_method = "average"
    synced_placement.placement.save(update_fields=["grading_method"])
    her = student(synced_placement, "avg")
    for correct in (1, 2, 2):
        finish_attempt(her, synced_placement, correct=correct)
    deliver_pending()
    assert grade_of(her, synced_placement).score_given == Decimal("1.67")
    assert posted(fake_lms, synced_placement, "avg") == 1.67
    mine = client_of(her).get(reverse("assessments:placement", args=[synced_placement.pk])).content
    assert b"1.67 / 8.00 (20.88%)" in mine
    staff_page = instructor.get(reverse("gradebook:grades", args=[synced_placement.pk])).content
    assert b"1.67 / 8.00" in staff_page
    api = instructor.get(f"/api/v1/grades/?placement={synced_placement.pk}").json()["results"]
    assert [row["score_given"] for row in api] == ["1.67"]
    assert [row["score_given"] for row in export(instructor, synced_placement, "grades")] == [
        "1.67"
    ]


def graded_placement_in(lab_placed, quiz):
    """A quiz placement in the same course as the lab, with its own line item."""
    from activities.services import place_activity
    from lti.models import ResourceLink

    lms_lineitem = lab_placed.lineitem_url.rsplit("/", 1)[0]
    link = ResourceLink(
        context=lab_placed.context,
        resource_link_id="rl-quiz",
        title="Quiz",
        lineitem_url=f"{lms_lineitem}/1",
        ags_scopes=lab_placed.ags_scopes,
    )
    place_activity(link, f"quiz:{quiz.slug}")
    return link


def test_a_lab_rule_change_regrades_at_once_and_says_how_many_changed(fake_lms):
    lab = small_lab()
    placement = graded_placement(fake_lms, lab)
    teacher = staff(placement, "teacher")
    punctual, tardy = student(placement, "punctual"), student(placement, "tardy")
    measured(placement, punctual, "0.9")
    measured(placement, tardy, "0.8", late=True)
    deliver_pending()
    assert grade_of(tardy, placement).score_given == 80
    form = {"late_policy": "penalty", "late_penalty_percent": "25", "grading_method": ""}
    manage = client_of(teacher).get(reverse("labs:manage", args=[placement.pk])).content.decode()
    form["due_at"] = re.search(r'name="due_at"[^>]*value="([^"]+)"', manage).group(1)
    page = client_of(teacher).post(reverse("labs:manage", args=[placement.pk]), form, follow=True)
    assert page.status_code == 200
    assert "1 grade changed" in page.content.decode()
    assert grade_of(tardy, placement).score_given == 60
    assert deliver_pending() == ["synced"]  # the punctual student's grade did not move
    assert posted(fake_lms, placement, "tardy") == 60.0
    change = GradeChange.objects.get()
    assert (change.cause, change.previous_score, change.new_score, change.actor) == (
        ChangeCause.SETTINGS,
        Decimal(80),
        Decimal(60),
        teacher,
    )

    # A run limit lowered to one: the second run (better) stops counting.
    measured(placement, punctual, "1", number=2)
    assert grade_of(punctual, placement).score_given == 100
    client_of(teacher).post(reverse("labs:manage", args=[placement.pk]), {**form, "max_runs": "1"})
    assert grade_of(punctual, placement).score_given == 90
    assert grade_of(punctual, placement).counted_number == 1


def test_the_grades_page_lists_the_roster_searches_sorts_and_pages_in_few_queries(
    synced_placement, django_assert_max_num_queries
):
    teacher = staff(synced_placement, "teacher")
    learners = [student(synced_placement, f"s{n:03d}") for n in range(60)]
    for number, user in enumerate(learners[:30]):
        finish_attempt(user, synced_placement, correct=number % 9)
    Membership.objects.filter(user=learners[59]).update(is_active=False)  # left, no attempt
    instructor = client_of(teacher)
    url = reverse("gradebook:grades", args=[synced_placement.pk])
    with django_assert_max_num_queries(20):
        page = instructor.get(url).content.decode()
    assert "59 students" in page
    assert "page 1 of 2" in page
    assert page.count('<tr id="student-') == 50
    second = instructor.get(f"{url}?page=2").content.decode()
    assert second.count('<tr id="student-') == 9
    found = instructor.get(f"{url}?q=s01").content.decode()
    assert found.count('<tr id="student-') == 10
    assert "10 students" in found
    best = instructor.get(f"{url}?sort=-grade").content.decode()
    first_row = best.split('<tr id="student-', 1)[1]
    assert "8.00 / 8.00" in first_row.split("</tr>", 1)[0]
    assert "attempt 1 counted" in first_row.split("</tr>", 1)[0]
    for bad in ("?page=abc", "?page=999", "?sort=nonsense", "?q=" + "x" * 500):
        assert instructor.get(url + bad).status_code == 200


def test_the_audit_trail_is_read_only_in_the_admin(synced_placement, admin_client):
    her = student(synced_placement, "her")
    teacher = staff(synced_placement, "teacher")
    finish_attempt(her, synced_placement, correct=5)
    client_of(teacher).post(
        reverse("gradebook:override", args=[synced_placement.pk]),
        {"user": her.pk, "score_given": "6", "reason": "Regraded by hand"},
    )
    change = GradeChange.objects.get()
    url = reverse("admin:activities_gradechange_change", args=[change.pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    assert "Regraded by hand" in page.content.decode()
    assert admin_client.post(url, {"reason": "edited"}).status_code == 403
    assert admin_client.get(reverse("admin:activities_gradechange_add")).status_code == 403
    grade_url = reverse("admin:activities_grade_change", args=[change.grade_id])
    assert admin_client.post(grade_url, {"score_given": "1"}).status_code == 403
    change.refresh_from_db()
    assert change.reason == "Regraded by hand"


def test_grades_stored_with_three_decimals_are_rounded_and_sent_again(synced_placement):
    import importlib

    from django.apps import apps as installed

    migration = importlib.import_module("assessments.migrations.0006_grades_by_the_rounding_rule")

    class TodaysModels:
        """The models that hold that migration's tables today: the grades moved to
        activities with their table; the columns it reads are all still there (a historical
        state would name the resource link's and the sync's columns as they were then)."""

        def get_model(self, app_label: str, name: str):
            moved = {("assessments", "Grade"): ("activities", "Grade")}
            return installed.get_model(*moved.get((app_label, name), (app_label, name)))

    apps = TodaysModels()
    her, him = student(synced_placement, "her"), student(synced_placement, "him")
    finish_attempt(her, synced_placement, correct=5)
    finish_attempt(him, synced_placement, correct=4)
    Grade.objects.filter(user=her).update(score_given=Decimal("1.665"))
    syncs = GradeSync.objects.count()
    migration.round_grades(apps, None)
    assert grade_of(her, synced_placement).score_given == Decimal("1.67")
    assert grade_of(him, synced_placement).score_given == 4
    assert GradeSync.objects.count() == syncs + 1
    assert GradeSync.objects.order_by("-pk").first().score_given == Decimal("1.67")


def test_a_quiz_default_changed_in_the_admin_regrades_the_placements_following_it(
    synced_placement, admin_client, quiz
):
    her = student(synced_placement, "her")
    finish_attempt(her, synced_placement, correct=6)
    finish_attempt(her, synced_placement, correct=4)
    assert grade_of(her, synced_placement).score_given == 6
    response = admin_client.post(
        reverse("admin:assessments_quiz_change", args=[quiz.pk]),
        {
            "slug": quiz.slug,
            "current_version": quiz.current_version_id,
            "max_attempts": 0,
            "grading_method": "last",
        },
    )
    assert response.status_code == 302
    assert grade_of(her, synced_placement).score_given == 4
    assert GradeChange.objects.get().cause == ChangeCause.SETTINGS


def test_an_override_sent_with_an_overlong_search_is_saved_and_says_so(synced_placement):
    """Found by fuzzing (2026-12-02): the override was saved, then the redirect back to the
    page with its search refused the address (over 16,384 characters) and showed an error."""
    her = student(synced_placement, "her")
    teacher = staff(synced_placement, "teacher")
    search = "x" * 20_000
    response = client_of(teacher).post(
        reverse("gradebook:override", args=[synced_placement.pk]),
        {"user": her.pk, "score_given": "7", "reason": "r", "q": search, "page": "9" * 20_000},
    )
    assert response.status_code == 302
    assert len(response["Location"]) < 500
    assert f"q={'x' * 100}&" in response["Location"]
    assert grade_of(her, synced_placement).is_overridden


@pytest.mark.parametrize("kind", ["quiz", "lab"])
def test_a_search_holding_a_nul_is_refused_with_a_message(fake_lms, quiz, kind):
    """Found by review: a NUL in the grades page's search reached the database, which refused
    it with a server error, on a quiz's grades page and a lab's alike."""
    placement = graded_placement(fake_lms, quiz if kind == "quiz" else small_lab())
    teacher = staff(placement, "teacher")
    url = reverse("gradebook:grades", args=[placement.pk])
    for search in ("%00", "x%00y"):
        refused = client_of(teacher).get(f"{url}?q={search}")
        assert refused.status_code == 400
        assert "The search contains a NUL character" in refused.content.decode()


def test_a_search_holding_a_lone_surrogate_matches_no_one(synced_placement):
    """A URL cannot carry an unpaired surrogate: its UTF-8 bytes read as replacement
    characters, which no student's name holds."""
    student(synced_placement, "her")
    teacher = staff(synced_placement, "teacher")
    url = reverse("gradebook:grades", args=[synced_placement.pk])
    page = client_of(teacher).get(f"{url}?q=%ED%A0%80")
    assert page.status_code == 200
    assert '<tr id="student-' not in page.content.decode()


@pytest.mark.parametrize("route", ["gradebook:override", "gradebook:clear-override"])
def test_an_override_sent_with_a_nul_in_its_search_is_refused_and_changes_nothing(
    synced_placement, route
):
    her = student(synced_placement, "her")
    teacher = staff(synced_placement, "teacher")
    finish_attempt(her, synced_placement, correct=5)
    before = list(Grade.objects.values())
    refused = client_of(teacher).post(
        reverse(route, args=[synced_placement.pk]),
        {"user": her.pk, "score_given": "3", "reason": "r", "q": "\x00"},
    )
    assert refused.status_code == 400
    assert "The search contains a NUL character" in refused.content.decode()
    assert list(Grade.objects.values()) == before
    assert not GradeChange.objects.exists()
