"""The grading API: who sees what, overrides and regrades, tokens, conventions."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from activities.models import Grade, GradeOverride, Regrade
from api.tokens import create_token, revoke_token
from assessments.models import Attempt, Option
from gradesync.models import GradeSync
from lti.models import Membership, Role
from tests.admin_forms import unchanged_form_data
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.labs_helpers import lab_placement, small_lab
from tests.quiz_helpers import launched_client

pytestmark = pytest.mark.django_db


class World:
    """Two courses on one platform: A (two learners, a teacher) and B (one learner, a
    teacher), with tokens for course A."""

    def __init__(self, fake_lms, quiz) -> None:
        self.a = graded_placement(fake_lms, quiz)
        self.b = graded_placement_b(self.a, quiz)
        self.l1, self.l2 = student(self.a, "l1"), student(self.a, "l2")
        self.l3 = student(self.b, "l3")
        self.teacher_a = staff(self.a, "ta")
        self.teacher_b = staff(self.b, "tb")
        finish_attempt(self.l1, self.a, correct=5)
        finish_attempt(self.l2, self.a, correct=7)
        finish_attempt(self.l3, self.b, correct=2)
        lab = small_lab()
        self.lab_a = lab_placement(self.a.context, lab, "lab-a")
        self.lab_b = lab_placement(self.b.context, lab, "lab-b")
        for user, placement in (
            (self.l1, self.lab_a),
            (self.l2, self.lab_a),
            (self.l3, self.lab_b),
        ):
            measured_run(user, placement)
        _, self.read_token = create_token(
            actor=self.teacher_a, name="read", context=self.a.context, can_write=False
        )
        _, self.write_token = create_token(
            actor=self.teacher_a, name="write", context=self.a.context, can_write=True
        )
        revoked, self.revoked_token = create_token(
            actor=self.teacher_a, name="old", context=self.a.context, can_write=True
        )
        revoke_token(revoked)

    def client(self, persona: str) -> Client:
        if persona == "anonymous":
            return Client()
        if persona in ("course_token", "write_token", "revoked_token"):
            value = {
                "course_token": self.read_token,
                "write_token": self.write_token,
                "revoked_token": self.revoked_token,
            }[persona]
            return Client(HTTP_AUTHORIZATION=f"Bearer {value}")
        user = {"learner": self.l1, "staff": self.teacher_a, "other_staff": self.teacher_b}[persona]
        return launched_client(user.lti_memberships.get())


def graded_placement_b(a, quiz):
    from activities.services import place_activity
    from lti.models import Context, ResourceLink

    context = Context.objects.create(
        deployment=a.context.deployment, context_id="course-2", title="Other course"
    )
    link = ResourceLink(
        context=context,
        resource_link_id="rl-b",
        lineitem_url=a.lineitem_url,
        ags_scopes=a.ags_scopes,
    )
    place_activity(link, f"quiz:{quiz.slug}")
    return link


def measured_run(user, placement, number: int = 1):
    from django.utils import timezone

    from labs.models import LabRun, RunStatus

    return LabRun.objects.create(
        placement=placement,
        user=user,
        number=number,
        policy={"kind": "sqrt"},
        submitted_at=timezone.now(),
        next_attempt_at=timezone.now(),
        status=RunStatus.SUCCEEDED,
        score="0.75",
        device="cpu",
        result={"peak_activation_bytes": 3080, "recompute_flops": 4096, "score": 0.75},
    )


def staff(placement, sub):
    user = student(placement, sub)
    Membership.objects.filter(user=user).update(role=Role.STAFF)
    return user


@pytest.fixture
def world(fake_lms, quiz) -> World:
    return World(fake_lms, quiz)


def users_in(body: dict) -> set[int]:
    return {row["user"]["id"] for row in body["results"]}


# Who may write (overrides, regrades): staff of the course in a session, or a write token.
WRITE_ACCESS = [
    ("learner", 403),
    ("staff", 201),
    ("other_staff", 404),
    ("anonymous", 401),
    ("course_token", 403),
    ("write_token", 201),
    ("revoked_token", 401),
]
PERSONAS = ["learner", "staff", "other_staff", "anonymous", "course_token", "revoked_token"]


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("endpoint", ["attempts", "grades", "lab-runs"])
def test_lists_show_each_caller_exactly_their_rows(world, persona, endpoint):
    response = world.client(persona).get(f"/api/v1/{endpoint}/")
    expected = {
        "learner": {world.l1.pk},
        "staff": {world.l1.pk, world.l2.pk},
        "other_staff": {world.l3.pk},
        "course_token": {world.l1.pk, world.l2.pk},
    }
    if persona in ("anonymous", "revoked_token"):
        assert response.status_code == 401
        assert response.json()["error"]["status"] == 401
        return
    assert response.status_code == 200
    assert users_in(response.json()) == expected[persona]


@pytest.mark.parametrize("persona", PERSONAS)
def test_responses_placements_and_roster_are_scoped(world, persona):
    client = world.client(persona)
    responses, placements, roster = (
        client.get(f"/api/v1/{name}/") for name in ("responses", "placements", "roster")
    )
    if persona in ("anonymous", "revoked_token"):
        assert {r.status_code for r in (responses, placements, roster)} == {401}
        return
    attempts_seen = {row["attempt"] for row in responses.json()["results"]}
    visible = {
        "learner": [world.l1],
        "staff": [world.l1, world.l2],
        "other_staff": [world.l3],
        "course_token": [world.l1, world.l2],
    }[persona]
    expected_attempts = {str(a.public_id) for a in Attempt.objects.filter(user__in=visible)}
    assert attempts_seen == expected_attempts
    placement_ids = {row["id"] for row in placements.json()["results"]}
    assert placement_ids == (
        {world.b.pk, world.lab_b.pk} if persona == "other_staff" else {world.a.pk, world.lab_a.pk}
    )
    types = {row["id"]: row["activity_type"] for row in placements.json()["results"]}
    labs = {world.lab_a.pk, world.lab_b.pk}
    assert types == {pk: "lab" if pk in labs else "quiz" for pk in placement_ids}
    members = {row["user"]["id"] for row in roster.json()["results"]}
    assert (
        members
        == {
            "learner": set(),
            "staff": {world.l1.pk, world.l2.pk, world.teacher_a.pk},
            "other_staff": {world.l3.pk, world.teacher_b.pk},
            "course_token": {world.l1.pk, world.l2.pk, world.teacher_a.pk},
        }[persona]
    )


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("learner", 404),
        ("staff", 200),
        ("other_staff", 404),
        ("anonymous", 401),
        ("course_token", 200),
        ("revoked_token", 401),
    ],
)
def test_attempt_detail_of_another_student(world, persona, status):
    attempt = Attempt.objects.get(user=world.l2)
    response = world.client(persona).get(f"/api/v1/attempts/{attempt.public_id}/")
    assert response.status_code == status
    if status == 200:
        body = response.json()
        assert body["score"] == 7
        assert len(body["responses"]) == 8
        assert {r["question"] for r in body["responses"]} == {f"q{n}" for n in range(1, 9)}
    if status == 404:
        assert response.json()["error"]["message"] == "Not found, or not yours to see."


@pytest.mark.parametrize(("persona", "status"), WRITE_ACCESS)
def test_override_needs_staff_write_access_to_the_course(world, persona, status):
    response = world.client(persona).post(
        "/api/v1/overrides/",
        {
            "placement": world.a.pk,
            "user": world.l1.pk,
            "score_given": "7.5",
            "reason": "Question 4 was ambiguous",
        },
        content_type="application/json",
    )
    assert response.status_code == status, response.content
    grade = Grade.objects.get(user=world.l1)
    if status == 201:
        assert grade.score_given == Decimal("7.5")
        assert grade.is_overridden
        override = GradeOverride.objects.get()
        assert override.previous_score == Decimal(5)
        assert override.reason.startswith("Question 4")
        assert override.created_by == world.teacher_a
        assert override.created_at
        sync = GradeSync.objects.filter(grade=grade).latest("created_at")
        assert sync.score_given == Decimal("7.5")
        # Later attempts no longer change an overridden grade.
        finish_attempt(world.l1, world.a, correct=1)
        grade.refresh_from_db()
        assert grade.score_given == Decimal("7.5")
    else:
        assert grade.score_given == Decimal(5)
        assert not GradeOverride.objects.exists()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"score_given": "9", "reason": "x"}, "between 0 and 8"),
        ({"score_given": "-1", "reason": "x"}, "between 0 and 8"),
        ({"score_given": "5", "reason": "   "}, "reason"),
        ({"score_given": "abc", "reason": "x"}, "score_given"),
    ],
)
def test_bad_overrides_are_refused_with_a_clear_message(world, payload, message):
    response = world.client("staff").post(
        "/api/v1/overrides/",
        {"placement": world.a.pk, "user": world.l1.pk, **payload},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]
    assert not GradeOverride.objects.exists()


def test_regrade_after_a_key_change_recomputes_and_syncs_only_changed_grades(world, seed_content):
    import dataclasses

    from assessments.services import load_quiz

    # The key of q1 changes: option b becomes the right answer.
    q1 = seed_content.questions[0]
    options = tuple(dataclasses.replace(o, correct=o.key == "b") for o in q1.options)
    edited = dataclasses.replace(
        seed_content,
        questions=(dataclasses.replace(q1, options=options), *seed_content.questions[1:]),
    )
    load_quiz(edited)
    syncs_before = GradeSync.objects.count()

    response = world.client("write_token").post(
        "/api/v1/regrades/", {"placement": world.a.pk}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    # Both learners of A answered q1 right under the old key (they got the first questions
    # right), so both lose a point; course B is untouched.
    assert body["attempts_changed"] == 2
    assert body["grades_changed"] == 2
    assert sorted((r["old_score"], r["new_score"]) for r in body["report"]) == [(5, 4), (7, 6)]
    assert Grade.objects.get(user=world.l1).score_given == Decimal(4)
    assert Grade.objects.get(user=world.l3).score_given == Decimal(2)
    assert GradeSync.objects.count() == syncs_before + 2
    regrade = Regrade.objects.get()
    assert regrade.created_by == world.teacher_a

    again = world.client("write_token").post(
        "/api/v1/regrades/", {"placement": world.a.pk}, content_type="application/json"
    )
    assert again.json()["attempts_changed"] == 0
    assert GradeSync.objects.count() == syncs_before + 2  # nothing changed, nothing sent


def test_tokens_are_created_hashed_listed_and_revoked(world):
    client = world.client("staff")
    created = client.post(
        "/api/v1/tokens/",
        {"name": "dashboards", "course": world.a.context_id},
        content_type="application/json",
    )
    assert created.status_code == 201
    value = created.json()["token"]
    from api.models import ApiToken

    stored = ApiToken.objects.get(pk=created.json()["id"])
    secret = value.split("_", 2)[2]
    assert secret
    assert secret not in stored.key_hash
    assert len(stored.key_hash) == 64
    with_token = Client(HTTP_AUTHORIZATION=f"Bearer {value}")
    assert with_token.get("/api/v1/grades/").status_code == 200
    assert "token" not in client.get("/api/v1/tokens/").json()["results"][0]
    assert client.delete(f"/api/v1/tokens/{stored.pk}/").status_code == 204
    assert with_token.get("/api/v1/grades/").status_code == 401
    # A teacher cannot mint a token for a course they do not teach, nor a site-wide one.
    other = client.post(
        "/api/v1/tokens/",
        {"name": "x", "course": world.b.context_id},
        content_type="application/json",
    )
    assert other.status_code == 404
    site = client.post(
        "/api/v1/tokens/", {"name": "x", "course": None}, content_type="application/json"
    )
    assert site.status_code == 403


def test_the_admin_shows_tokens_revokes_them_and_makes_or_widens_none(world, admin_user):
    """Found by review: the admin's add form stored a token with an empty prefix and hash,
    which no value matches and whose secret no one saw, and a second one was a server error
    (the prefix is unique); its change form could clear a revocation or widen a token's
    course and rights past the checks the API makes (api.views.TokenViewSet)."""
    from api.models import ApiToken

    admin = Client(raise_request_exception=False)
    admin.force_login(admin_user)
    add = reverse("admin:api_apitoken_add")
    for name in ("one", "two"):
        refused = admin.post(add, {"name": name, "context": "", "created_by": admin_user.pk})
        assert refused.status_code == 403
    assert not ApiToken.objects.filter(name__in=("one", "two")).exists()

    revoked = ApiToken.objects.get(name="old")
    saved = admin.post(
        reverse("admin:api_apitoken_change", args=[revoked.pk]),
        unchanged_form_data(admin_user, ApiToken, revoked)
        | {"name": "old, renamed", "revoked_at_0": "", "revoked_at_1": "",
           "context": world.b.context_id, "can_write": ""},
    )  # fmt: skip
    assert saved.status_code == 302
    revoked.refresh_from_db()
    assert revoked.name == "old, renamed"  # what the admin changes
    assert revoked.revoked_at is not None
    assert revoked.context_id == world.a.context_id
    refused = Client(HTTP_AUTHORIZATION=f"Bearer {world.revoked_token}").get("/api/v1/grades/")
    assert refused.status_code == 401

    deleted = admin.post(reverse("admin:api_apitoken_delete", args=[revoked.pk]), {"post": "yes"})
    assert deleted.status_code == 302
    assert not ApiToken.objects.filter(pk=revoked.pk).exists()  # and deleted there

    read = ApiToken.objects.get(name="read")
    revoke = admin.post(
        reverse("admin:api_apitoken_changelist"),
        {"action": "revoke_tokens", "_selected_action": [read.pk]},
    )
    assert revoke.status_code == 302
    read.refresh_from_db()
    assert read.revoked_at is not None
    refused = Client(HTTP_AUTHORIZATION=f"Bearer {world.read_token}").get("/api/v1/grades/")
    assert refused.status_code == 401


def test_a_course_token_stops_working_when_its_creator_stops_teaching(world):
    Membership.objects.filter(user=world.teacher_a).update(role=Role.LEARNER)
    response = world.client("course_token").get("/api/v1/grades/")
    assert response.status_code == 401
    message = response.json()["error"]["message"]
    assert message == "The token's creator no longer teaches its course."


def test_list_endpoints_use_a_constant_number_of_queries(world, django_assert_max_num_queries):
    client = world.client("course_token")
    for name in ("attempts", "grades", "responses", "roster", "overrides", "lab-runs"):
        with django_assert_max_num_queries(8):
            small = client.get(f"/api/v1/{name}/?page_size=1")
        for number in range(20):
            extra = student(world.a, f"extra-{name}-{number}")
            finish_attempt(extra, world.a, correct=number % 9)
            measured_run(extra, world.lab_a)
        with django_assert_max_num_queries(8):
            large = client.get(f"/api/v1/{name}/?page_size=100")
        assert small.status_code == large.status_code == 200


def test_filters_ordering_and_pagination(world):
    client = world.client("staff")
    body = client.get(f"/api/v1/attempts/?user={world.l2.pk}").json()
    assert [row["user"]["id"] for row in body["results"]] == [world.l2.pk]
    ordered = client.get("/api/v1/grades/?ordering=-score_given").json()["results"]
    assert [row["score_given"] for row in ordered] == ["7.00", "5.00"]
    page = client.get("/api/v1/responses/?page_size=5").json()
    assert page["count"] == 16
    assert len(page["results"]) == 5
    assert page["next"]
    wrong = Option.objects.filter(is_correct=False).values_list("question__key", flat=True)[0]
    assert client.get(f"/api/v1/responses/?question={wrong}&is_correct=true").status_code == 200
    bad = client.get("/api/v1/attempts/?state=sleeping")
    assert bad.status_code == 400
    assert "state" in bad.json()["error"]["message"]


def test_read_endpoints_answer_not_modified_to_a_matching_etag(world):
    client = world.client("staff")
    first = client.get("/api/v1/grades/")
    assert first.has_header("ETag")
    again = client.get("/api/v1/grades/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304


def test_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/grades/" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()
    assert b"cdn.jsdelivr" not in docs.content  # served from our static files


@pytest.mark.parametrize(
    "value", ["0205-09-10T08:45:16-16:12", "0001-01-01T00:00:00+14:00", "yesterday", "2026-13-01"]
)
def test_bad_dates_in_filters_are_a_400(world, value):
    response = world.client("staff").get("/api/v1/attempts/", {"started_after": value})
    assert response.status_code == 400
    assert "started_after" in response.json()["error"]["message"]


def test_a_date_filter_in_any_time_zone_selects_by_the_instant(world):
    started = Attempt.objects.get(user=world.l1).started_at
    local = started.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Tokyo")).isoformat()
    body = world.client("staff").get("/api/v1/attempts/", {"started_after": local}).json()
    assert world.l1.pk in users_in(body)


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("learner", 403),
        ("staff", 200),
        ("other_staff", 404),
        ("anonymous", 401),
        ("course_token", 200),
        ("revoked_token", 401),
    ],
)
def test_placement_analytics_for_staff(world, persona, status):
    response = world.client(persona).get(f"/api/v1/placements/{world.a.pk}/analytics/")
    assert response.status_code == status
    if status == 200:
        body = response.json()
        assert (body["attempts"], body["finished"], body["mean_score"]) == (2, 2, 6.0)
        assert [b["count"] for b in body["score_histogram"]] == [0, 0, 0, 0, 0, 1, 0, 1, 0]
        q6 = next(q for q in body["questions"] if q["key"] == "q6")
        assert q6["facility"] == 0.5
        assert q6["answered"] == 2
        assert sum(option["chosen"] for option in q6["options"]) == 2


@pytest.mark.parametrize(("persona", "status"), WRITE_ACCESS)
def test_regrade_needs_staff_write_access(world, persona, status):
    response = world.client(persona).post(
        "/api/v1/regrades/", {"placement": world.a.pk}, content_type="application/json"
    )
    assert response.status_code == status
    assert Regrade.objects.count() == (1 if status == 201 else 0)


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("learner", 200),
        ("staff", 200),
        ("other_staff", 200),
        ("anonymous", 401),
        ("course_token", 200),
        ("revoked_token", 401),
    ],
)
def test_activities_are_listed_to_any_signed_in_caller(world, persona, status):
    """Every kind's activities: the labs as well as the quiz."""
    response = world.client(persona).get("/api/v1/activities/")
    assert response.status_code == status
    if status == 200:
        rows = response.json()["results"]
        assert [a["key"] for a in rows] == ["lab:tiny-chain", "quiz:gradient-checkpointing"]
        lab, quiz = rows
        assert lab["kind"] == "lab"
        assert lab["title"]["ru"] == "Маленькая цепочка"
        assert lab["score_maximum"] == "100.000"
        assert quiz["score_maximum"] == "8.000"


def test_a_non_numeric_placement_id_is_a_404(world):
    response = world.client("staff").get("/api/v1/placements/abc/analytics/")
    assert response.status_code == 404


def test_an_id_in_the_path_is_ascii_digits_as_in_django_urls(world):
    """Arabic-Indic digits spell the placement's own id to int(), and a superscript two passes
    str.isdigit() and then fails int(): each is no id, a 404, as Django's <int:> paths say."""
    client = world.client("staff")
    own = str(world.a.pk)
    arabic = "".join(chr(0x660 + int(digit)) for digit in own)
    for path in ("", "analytics/", "lab-analytics/"):
        assert client.get(f"/api/v1/placements/{own}/{path}").status_code != 404, path
        for spelled in (arabic, "\u00b2", own + "\u00b2", str(10**25)):
            response = client.get(f"/api/v1/placements/{spelled}/{path}")
            assert response.status_code == 404, (spelled, path, response.content[:200])
    grade = world.a.grades.first()
    assert client.get(f"/api/v1/grades/{grade.pk}/").status_code == 200
    arabic = "".join(chr(0x660 + int(digit)) for digit in str(grade.pk))
    assert client.get(f"/api/v1/grades/{arabic}/").status_code == 404


def test_lab_run_detail_carries_the_measurements_and_a_lab_regrade_grades_its_runs(world):
    client = world.client("staff")
    run = world.l1.lab_runs.get()
    detail = client.get(f"/api/v1/lab-runs/{run.public_id}/")
    assert detail.status_code == 200
    assert detail.json()["result"]["peak_activation_bytes"] == 3080
    assert detail.json()["score"] == "0.7500"
    assert world.client("other_staff").get(f"/api/v1/lab-runs/{run.public_id}/").status_code == 404
    filtered = client.get(f"/api/v1/lab-runs/?user={world.l2.pk}&status=succeeded")
    assert users_in(filtered.json()) == {world.l2.pk}
    analytics = client.get(f"/api/v1/placements/{world.lab_a.pk}/analytics/")
    assert analytics.status_code == 400
    assert "lab" in analytics.json()["error"]["message"] + str(analytics.json()["error"]["details"])
    # The runs were stored without grading them: a regrade grades them by the lab's rules.
    regrade = world.client("write_token").post(
        "/api/v1/regrades/", {"placement": world.lab_a.pk}, content_type="application/json"
    )
    assert regrade.status_code == 201
    assert regrade.json()["grades_changed"] == 2
    assert {row["new_score"] for row in regrade.json()["grades_report"]} == {"75.00"}


# Found by fuzzing the running service (2026-12-02): each of these was a 500.


@pytest.mark.parametrize("version", ["\n", "\r\n", "\x00", '"zz'])
def test_the_schema_ignores_a_version_asked_for_in_its_address(client, version):
    schema = client.get("/api/schema/", {"version": version})
    assert schema.status_code == 200
    disposition = schema["Content-Disposition"]
    assert "zz" not in disposition
    assert all(ord(char) >= 32 for char in disposition)


def test_the_activities_list_opens_in_a_browser(world):
    page = world.client("learner").get("/api/v1/activities/", HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    assert b"gradient-checkpointing" in page.content


@pytest.mark.parametrize(
    ("endpoint", "name"),
    [
        ("placements", "course"),
        ("attempts", "user"),
        ("attempts", "placement"),
        ("lab-runs", "course"),
        ("grades", "user"),
        ("roster", "course"),
        ("responses", "placement"),
    ],
)
def test_an_id_filter_that_is_not_an_id_is_a_400(world, endpoint, name):
    client = world.client("staff")
    for value in (str(10**30), str(2**63), "1.5", "1e0", "\u0661", "-1", "0"):
        response = client.get(f"/api/v1/{endpoint}/", {name: value})
        assert response.status_code == 400, (value, response.content[:300])
        assert name in response.json()["error"]["message"]
    assert client.get(f"/api/v1/{endpoint}/", {name: str(2**63 - 1)}).status_code == 200


@pytest.mark.parametrize("field", ["user", "placement"])
def test_an_override_naming_an_id_past_the_largest_is_a_400(world, field):
    payload = {"placement": world.a.pk, "user": world.l1.pk, "score_given": "5", "reason": "r"}
    response = world.client("staff").post(
        "/api/v1/overrides/", {**payload, field: 2**63}, content_type="application/json"
    )
    assert response.status_code == 400
    assert field in response.json()["error"]["message"]
    assert not GradeOverride.objects.exists()


def test_json_holding_an_unpaired_surrogate_is_a_400(world):
    body = json.dumps(
        {"placement": world.a.pk, "user": world.l1.pk, "score_given": "5", "reason": "\ud800"}
    )
    assert "\\ud800" in body  # the escape, as a client sends it
    response = world.client("staff").post(
        "/api/v1/overrides/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert "Unicode" in response.json()["error"]["message"]
    assert not GradeOverride.objects.exists()


def override_l1(world, *, share_reason: bool, score: str = "5"):
    return world.client("staff").post(
        "/api/v1/overrides/",
        {
            "placement": world.a.pk,
            "user": world.l1.pk,
            "score_given": score,
            "reason": "private: suspected copying",
            "share_reason": share_reason,
        },
        content_type="application/json",
    )


@pytest.mark.parametrize(
    ("persona", "shared", "reason"),
    [
        ("learner", False, ""),
        ("learner", True, "private: suspected copying"),
        ("staff", False, "private: suspected copying"),
        ("course_token", False, "private: suspected copying"),
    ],
)
def test_a_learner_reads_the_override_reason_only_when_shared(world, persona, shared, reason):
    assert override_l1(world, share_reason=shared).status_code == 201
    grade = Grade.objects.get(user=world.l1)
    client = world.client(persona)
    rows = client.get(f"/api/v1/grades/?user={world.l1.pk}").json()["results"]
    assert [row["override_reason"] for row in rows] == [reason]
    detail = client.get(f"/api/v1/grades/{grade.pk}/").json()
    assert detail["override_reason"] == reason
    assert detail["override_reason_shared"] is shared


@pytest.mark.parametrize(("persona", "shown"), [("learner", False), ("staff", True)])
def test_the_lms_error_of_a_grade_sync_is_for_staff_only(world, persona, shown):
    grade = Grade.objects.get(user=world.l1)
    GradeSync.objects.filter(grade=grade).update(state="failed", last_error="LMS said: 422 nope")
    sync = world.client(persona).get(f"/api/v1/grades/{grade.pk}/").json()["sync"]
    assert sync["state"] == "failed"
    assert ("last_error" in sync) is shown
    if shown:
        assert sync["last_error"] == "LMS said: 422 nope"


def test_a_course_token_lists_no_tokens_not_even_of_its_creators_other_courses(world):
    Membership.objects.create(context=world.b.context, user=world.teacher_a, role=Role.STAFF)
    create_token(
        actor=world.teacher_a, name="B integration", context=world.b.context, can_write=True
    )
    response = world.client("course_token").get("/api/v1/tokens/")
    assert response.status_code == 403
    message = response.json()["error"]["message"]
    assert message == "Tokens are managed from a signed-in session, not a token."


def test_a_session_lists_its_users_tokens(world):
    body = world.client("staff").get("/api/v1/tokens/").json()
    assert {row["name"] for row in body["results"]} == {"read", "write", "old"}
    assert world.client("other_staff").get("/api/v1/tokens/").json()["results"] == []


def test_a_token_cannot_revoke_a_token(world):
    from api.models import ApiToken

    read = ApiToken.objects.get(name="read")
    response = world.client("write_token").delete(f"/api/v1/tokens/{read.pk}/")
    assert response.status_code == 403
    read.refresh_from_db()
    assert read.revoked_at is None


@pytest.mark.parametrize("score", ["-0", "-0.00", "-0e3"])
def test_an_override_of_negative_zero_answers_as_it_reads_back(world, score):
    created = override_l1(world, share_reason=False, score=score)
    assert created.status_code == 201, created.content
    assert created.json()["score_given"] == "0.00"
    listed = world.client("staff").get("/api/v1/overrides/").json()["results"]
    assert [row["score_given"] for row in listed] == ["0.00"]
    grade = world.client("staff").get(f"/api/v1/grades/?user={world.l1.pk}").json()["results"]
    assert [row["score_given"] for row in grade] == ["0.00"]
