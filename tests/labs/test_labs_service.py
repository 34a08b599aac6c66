"""Lab submissions, execution (the real runner in a child process), grading, the
schedule and the pages."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone, translation

from activities.demo import enrol_demo_member, ensure_demo_placement
from activities.models import ChangeCause, Grade, GradeChange
from activities.services import recompute_placement
from gradesync.models import GradeSync
from labs import services
from labs.errors import InvalidPolicy, LabNotOpen, RunPending
from labs.execution import Outcome
from labs.grading import GradedRun, lab_grade_fraction
from labs.models import Lab, LabRun, LabSchedule, LatePolicy, RunStatus
from lti.models import Context, Membership, Role
from ops import jobs
from tests.admin_forms import unchanged_form_data
from tests.db_refusal import refuse_inserts
from tests.grades_helpers import graded_placement, student
from tests.labs_helpers import lab_placement, small_lab
from tests.quiz_helpers import launched_client
from tests.threads import hold_uncommitted

SQRT = {"kind": "sqrt"}


@pytest.fixture(autouse=True)
def quick_runs(settings):
    settings.LAB_TIMING_REPEATS = 1
    settings.LAB_RETRY_BACKOFF_SECONDS = 0


@pytest.fixture
def lab(db):  # noqa: ARG001
    return small_lab()


@pytest.fixture
def lab_members(quiz):  # noqa: ARG001
    """A learner and an instructor in the demo course, with a lab placed in it."""
    learner = enrol_demo_member(Role.LEARNER)
    staff = enrol_demo_member(Role.STAFF)
    return learner, staff


@pytest.fixture
def placed(lab_members, lab):
    learner, _staff = lab_members
    return lab_placement(learner.context, lab)


def submit(placement, user, policy=SQRT, **kwargs) -> LabRun:
    return services.submit_run(placement=placement, user=user, policy=policy, **kwargs)


def measured_run(placement, user, number: int, submitted_at, **fields) -> LabRun:
    """A run already measured, made directly (the runner is not what these tests check)."""
    return LabRun.objects.create(
        placement=placement,
        user=user,
        number=number,
        policy=SQRT,
        submitted_at=submitted_at,
        next_attempt_at=submitted_at,
        status=RunStatus.SUCCEEDED,
        **fields,
    )


@pytest.mark.torch
@pytest.mark.usefixtures("db")
def test_a_submitted_run_is_measured_graded_and_queued_for_the_gradebook(fake_lms, lab):
    placement = graded_placement(fake_lms, lab)
    user = student(placement, "s1")
    run = submit(placement, user)
    assert run.status == RunStatus.QUEUED
    assert run.number == 1

    done = services.execute_run(run.pk)
    assert done.status == RunStatus.SUCCEEDED, done.error
    assert done.result["grads_match"]
    assert done.result["device"] == "cpu"
    assert Decimal(0) < done.score <= Decimal(1)
    grade = Grade.objects.get(user=user, placement=placement)
    assert grade.score_maximum == 100
    assert grade.score_given == (done.score * 100).quantize(Decimal("0.001"))
    sync = GradeSync.objects.get(grade=grade)
    assert sync.score_given == grade.score_given
    assert sync.score_maximum == 100
    # Running it again changes nothing: the run is done.
    assert services.execute_run(run.pk) is None
    assert GradeSync.objects.count() == 1


@pytest.mark.torch
def test_a_run_the_runner_refuses_is_shown_to_the_student_and_not_graded(placed, lab_members):
    learner, _ = lab_members
    # A valid policy, but the lab's model is broken: the runner refuses the run (exit 2).
    placed.lab_placement.lab.blocks = 0
    placed.lab_placement.lab.save()
    run = LabRun.objects.create(
        placement=placed,
        user=learner.user,
        number=1,
        policy={"kind": "none"},
        submitted_at=timezone.now(),
        next_attempt_at=timezone.now(),
    )
    done = services.execute_run(run.pk)
    assert done.status == RunStatus.REJECTED
    assert "blocks must be a whole number" in done.error
    assert not Grade.objects.exists()


@pytest.mark.torch
def test_a_policy_the_runner_refuses_is_said_in_the_readers_language(placed, lab_members):
    """The policy passed the service's check, then the lab's model changed under it: the
    runner's reason is recorded with its template, and each reader reads it in their own
    language (it was the runner's English inside a Russian sentence)."""
    learner, staff = lab_members
    whole = {"kind": "boundaries", "segments": [{"start": 0, "end": 8, "checkpoint": True}]}
    run = submit(placed, learner.user, whole)
    placed.lab_placement.lab.blocks = 12
    placed.lab_placement.lab.save()
    done = services.execute_run(run.pk)
    assert done.status == RunStatus.REJECTED
    assert done.error == "blocks 8–12 are in no segment"

    address = reverse("labs:run", args=[done.public_id])
    with translation.override("ru"):  # what the request activates, undone after it
        russian = launched_client(learner).get(address, HTTP_ACCEPT_LANGUAGE="ru")
        staff_page = launched_client(staff).get(
            reverse("labs:manage", args=[placed.pk]), HTTP_ACCEPT_LANGUAGE="ru"
        )
    assert "Исполнитель отклонил эту политику: блоки 8–12 не входят ни в один сегмент" in (
        russian.content.decode()
    )
    english = launched_client(learner).get(address, HTTP_ACCEPT_LANGUAGE="en")
    assert "The runner refused this policy: blocks 8–12 are in no segment" in (
        english.content.decode()
    )
    assert "блоки 8–12 не входят ни в один сегмент" in staff_page.content.decode()


def test_a_refusal_whose_values_do_not_fit_its_template_shows_the_recorded_reason():
    """A refusal recorded by an older runner (a template whose fields its values lack, or
    values that are not a mapping) is shown as the worker recorded it, never a 500."""
    for refusal in (
        {"template": "blocks %(first)s–%(last)s are in no segment", "params": {"first": 8}},
        {"template": "blocks %(first)s–%(last)s are in no segment", "params": ["8", "12"]},
    ):
        run = LabRun(error="blocks 8–12 are in no segment", refusal=refusal)
        assert run.reason == "blocks 8–12 are in no segment"


@pytest.mark.torch
def test_an_infrastructure_failure_is_retried_then_marked_never_graded_zero(
    placed, lab_members, settings
):
    learner, _ = lab_members
    settings.LAB_RUN_TIMEOUT_SECONDS = 0.05  # the child cannot even import torch in time
    settings.LAB_MAX_EXECUTION_ATTEMPTS = 2
    run = submit(placed, learner.user)
    first = services.execute_run(run.pk)
    assert first.status == RunStatus.QUEUED
    assert first.execution_attempts == 1
    assert "longer than" in first.error
    second = services.execute_run(run.pk)
    assert second.status == RunStatus.INFRASTRUCTURE_FAILED
    assert second.execution_attempts == 2
    assert not Grade.objects.exists()
    # It does not count against the student's runs: they can submit again at once.
    settings.LAB_RUN_TIMEOUT_SECONDS = 600
    again = submit(placed, learner.user)
    assert services.execute_run(again.pk).status == RunStatus.SUCCEEDED


@pytest.mark.torch
def test_a_memory_cap_stops_a_run_as_an_infrastructure_failure(placed, lab_members, settings):
    learner, _ = lab_members
    settings.LAB_MEMORY_CAP_BYTES = 64 * 2**20
    settings.LAB_DEVICE = "cpu"
    run = submit(placed, learner.user)
    done = services.execute_run(run.pk)
    # Back in the queue, with why: the address-space cap refused the child's memory (here
    # already when torch maps its libraries), not some other failure.
    assert done.status == RunStatus.QUEUED
    assert re.search(r"failed to map|Cannot allocate memory|MemoryError|out of memory", done.error)


def test_only_the_lease_holder_records_an_outcome(placed, lab_members):
    learner, _ = lab_members
    run = submit(placed, learner.user)
    claimed = services._claim(run.pk)
    assert services._claim(run.pk) is None  # no second worker while the lease holds
    LabRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    taken_over = services._claim(run.pk)
    assert taken_over.execution_attempts == 2
    stale = Outcome("measured", result={"score": 1, "device": "cpu"})
    assert services.record_outcome(claimed, stale) is None
    assert LabRun.objects.get(pk=run.pk).status == RunStatus.RUNNING


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"kind": "segments", "size": 99}, "between 1 and 8"),
        (
            {"kind": "boundaries", "segments": [{"start": 0, "end": 9, "checkpoint": True}]},
            "between 0 and 8",
        ),
        ({"kind": "teleport"}, "unknown policy kind"),
        ("not json", "not valid JSON"),
    ],
)
def test_bad_policies_are_refused_before_anything_runs(placed, lab_members, policy, message):
    learner, _ = lab_members
    with pytest.raises(InvalidPolicy, match=message):
        submit(placed, learner.user, policy)
    assert not LabRun.objects.exists()


def test_schedule_opens_closes_and_late_policy(placed, lab_members):
    learner, _ = lab_members
    now = timezone.now()
    schedule = services.update_schedule(
        placed,
        opens_at=now + timedelta(hours=1),
        due_at=now + timedelta(hours=2),
        closes_at=now + timedelta(hours=3),
    ).schedule
    with pytest.raises(LabNotOpen, match="not open yet"):
        submit(placed, learner.user)
    on_time = submit(placed, learner.user, now=now + timedelta(minutes=90))
    assert not on_time.is_late
    LabRun.objects.filter(pk=on_time.pk).update(status=RunStatus.SUCCEEDED, score=Decimal("0.5"))
    late = submit(placed, learner.user, now=now + timedelta(minutes=150))
    assert late.is_late
    LabRun.objects.filter(pk=late.pk).update(status=RunStatus.SUCCEEDED, score=Decimal("0.5"))
    with pytest.raises(LabNotOpen, match="closed"):
        submit(placed, learner.user, now=now + timedelta(hours=4))
    schedule.late_policy = LatePolicy.REFUSE
    schedule.save()
    with pytest.raises(LabNotOpen, match="no late runs"):
        submit(placed, learner.user, now=now + timedelta(minutes=150))
    assert LabSchedule.objects.get(pk=placed.pk).finalized_at is None


def test_one_run_at_a_time_and_the_run_limit(placed, lab_members):
    learner, _ = lab_members
    first = submit(placed, learner.user)
    with pytest.raises(RunPending):
        submit(placed, learner.user)
    services.update_schedule(placed, max_runs=1)
    LabRun.objects.filter(pk=first.pk).update(status=RunStatus.REJECTED)
    with pytest.raises(LabNotOpen, match="all 1 runs"):
        submit(placed, learner.user)


def test_schedule_refuses_times_out_of_order(placed):
    now = timezone.now()
    with pytest.raises(services.InvalidSchedule, match="after the opening"):
        services.update_schedule(placed, opens_at=now, due_at=now - timedelta(hours=1))
    with pytest.raises(services.InvalidSchedule, match="closing time"):
        services.update_schedule(placed, due_at=now, closes_at=now - timedelta(hours=1))


def test_grade_is_the_best_or_the_last_run_after_the_late_policy():
    now = timezone.now()
    runs = [
        GradedRun(now, Decimal("0.6"), False),
        GradedRun(now + timedelta(hours=1), Decimal("0.9"), True),
        GradedRun(now + timedelta(hours=2), Decimal("0.7"), False),
    ]
    assert lab_grade_fraction(runs, "highest", LatePolicy.ACCEPT, 0) == Decimal("0.9")
    assert lab_grade_fraction(runs, "highest", LatePolicy.PENALTY, 50) == Decimal("0.7")
    assert lab_grade_fraction(runs, "last", LatePolicy.PENALTY, 50) == Decimal("0.7")
    assert lab_grade_fraction(runs[:2], "last", LatePolicy.PENALTY, 50) == Decimal("0.45")
    assert lab_grade_fraction([], "highest", LatePolicy.ACCEPT, 0) is None


def test_at_the_due_time_grades_settle_from_the_runs_so_far(placed, lab_members):
    learner, _ = lab_members
    now = timezone.now()
    services.update_schedule(placed, due_at=now + timedelta(hours=1), grading_method="last")
    for number, score in ((1, "0.9"), (2, "0.4")):
        measured_run(
            placed, learner.user, number, now + timedelta(minutes=number), score=Decimal(score)
        )
    assert services.settle_due_labs(now) == 0  # not due yet
    assert services.settle_due_labs(now + timedelta(hours=2)) == 1
    grade = Grade.objects.get(user=learner.user, placement=placed)
    assert grade.score_given == Decimal("40.000")  # the last run, as the schedule says
    assert LabSchedule.objects.get(pk=placed.pk).finalized_at is not None
    assert services.settle_due_labs(now + timedelta(hours=3)) == 0  # once


def test_stuck_runs_are_requeued(placed, lab_members):
    learner, _ = lab_members
    run = submit(placed, learner.user)
    services._claim(run.pk)
    assert services.requeue_stuck_runs() == 0  # the lease still holds
    LabRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert services.requeue_stuck_runs() == 1


# --- Pages -----------------------------------------------------------------------------


@pytest.mark.torch
def test_student_submits_from_the_picture_of_the_layers_and_sees_the_result(placed, lab_members):
    learner, _ = lab_members
    client = launched_client(learner)
    page = client.get(f"/lab/{placed.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "Tiny chain" in html
    assert html.count('name="recompute"') == 8
    assert html.count('name="cuts"') == 7

    response = client.post(
        f"/lab/{placed.pk}/runs/",
        {"kind": "layers", "recompute": ["0", "1", "2", "4", "5", "6"], "cuts": ["4"]},
    )
    assert response.status_code == 302
    run = LabRun.objects.get()
    assert run.policy == {
        "kind": "boundaries",
        "segments": [
            {"start": 0, "end": 3, "checkpoint": True},
            {"start": 3, "end": 4, "checkpoint": False},
            {"start": 4, "end": 7, "checkpoint": True},
            {"start": 7, "end": 8, "checkpoint": False},
        ],
    }
    waiting = client.get(response["Location"]).content.decode()
    assert "number 1 in the queue" in waiting
    assert 'http-equiv="refresh"' in waiting

    services.execute_run(run.pk)
    result = client.get(response["Location"]).content.decode()
    assert 'id="score"' in result
    assert "refresh" not in result
    assert re.search(r'data-kind="student" data-peak-bytes="\d+"', result)
    assert 'data-kind="frontier"' in result
    assert 'data-kind="sqrt"' in result
    assert "Score = min(1," in result or "Score 100%" in result


def test_bad_form_input_gets_a_400_with_the_reason(placed, lab_members):
    learner, _ = lab_members
    client = launched_client(learner)
    for data, message in (
        ({"kind": "segments"}, "Give the segment size"),
        ({"kind": "json", "policy_json": "{"}, "not valid JSON"),
        ({"kind": "json", "policy_json": '{"kind": "segments", "size": 0}'}, "between 1 and 8"),
        ({"kind": "warp"}, "Select a valid choice"),
        # Found in review: JSON keeps the last of two equal keys, so this ran as "none".
        (
            {"kind": "json", "policy_json": '{"kind": "sqrt", "kind": "none"}'},
            "the field &#x27;kind&#x27; appears twice",
        ),
    ):
        response = client.post(f"/lab/{placed.pk}/runs/", data)
        assert response.status_code == 400, data
        assert message in response.content.decode(), data
    assert not LabRun.objects.exists()


@pytest.mark.usefixtures("quiz")
def test_runs_are_private_and_management_is_for_staff(placed, lab_members):
    learner, staff = lab_members
    run = submit(placed, learner.user)
    other = launched_client(enrol_demo_member(Role.LEARNER))
    assert other.get(f"/runs/{run.public_id}/").status_code == 403
    assert other.get(f"/lab/{placed.pk}/manage/").status_code == 403
    instructor = launched_client(staff)
    assert instructor.get(f"/runs/{run.public_id}/").status_code == 200
    manage = instructor.get(f"/lab/{placed.pk}/manage/")
    assert manage.status_code == 200
    assert 'id="class-runs"' in manage.content.decode()
    bad = instructor.post(
        f"/lab/{placed.pk}/manage/",
        {"due_at": "2030-01-02T10:00", "closes_at": "2030-01-01T10:00", "late_policy": "accept",
         "late_penalty_percent": "0"},
    )  # fmt: skip
    assert bad.status_code == 400
    assert "closing time" in bad.content.decode()
    good = instructor.post(
        f"/lab/{placed.pk}/manage/",
        {"due_at": "2030-01-02T10:00", "late_policy": "penalty", "late_penalty_percent": "20",
         "max_runs": "3", "grading_method": "last"},
    )  # fmt: skip
    assert good.status_code == 302
    schedule = LabSchedule.objects.get(pk=placed.pk)
    assert (schedule.late_policy, schedule.late_penalty_percent, schedule.max_runs) == (
        "penalty",
        20,
        3,
    )
    # A lab's pages are not a quiz's, nor the other way round, for staff and students alike;
    # a stranger's session reaches neither.
    quiz_placed = ensure_demo_placement()
    student_client = launched_client(learner)
    for client, path in (
        (student_client, f"/quiz/{placed.pk}/"),
        (instructor, f"/quiz/{placed.pk}/manage/"),
        (student_client, f"/lab/{quiz_placed.pk}/"),
        (instructor, f"/lab/{quiz_placed.pk}/manage/"),
    ):
        assert client.get(path).status_code == 404, path
    refused = student_client.post(f"/quiz/{placed.pk}/start/")  # a start, which reads on its own
    assert refused.status_code == 404
    assert "This activity is not a quiz." in refused.content.decode()
    assert student_client.get(f"/lab/{placed.pk}/").status_code == 200
    anonymous = type(instructor)()
    assert anonymous.get(f"/lab/{placed.pk}/").status_code == 403


@pytest.mark.usefixtures("quiz")
def test_demo_course_offers_the_lab(client):
    from django.core.management import call_command

    call_command("load_labs")
    response = client.post("/lti/demo/launch/", {"role": "learner", "activity": "lab"})
    assert response.status_code == 302
    assert response["Location"].startswith("/lab/")
    assert "64-block chain" in client.get(response["Location"]).content.decode()


# --- Found in review: inputs that must be refused, not crash ---------------------------


def test_absurd_json_and_dates_are_refused_with_a_message(placed, lab_members):
    learner, staff = lab_members
    client = launched_client(learner)
    for text in ('{"kind": "segments", "size": ' + "9" * 5000 + "}", "[" * 5000 + "]" * 5000):
        response = client.post(f"/lab/{placed.pk}/runs/", {"kind": "json", "policy_json": text})
        assert response.status_code == 400
        assert "too large or too deeply nested" in response.content.decode()
    instructor = launched_client(staff)
    response = instructor.post(
        f"/lab/{placed.pk}/manage/",
        {"due_at": "0001-01-01T00:00", "late_policy": "accept", "late_penalty_percent": "0"},
    )
    assert response.status_code == 400
    assert "between the years 1900 and 9000" in response.content.decode()
    assert instructor.get(f"/lab/{placed.pk}/").status_code == 200


def test_a_placements_schedule_from_custom_parameters_ignores_what_does_not_parse(placed):
    schedule = services.schedule_from_custom(
        placed,
        {
            "due_at": "0001-01-01T00:00:00+14:00",
            "closes_at": "9999-12-31T23:59:59-14:00",
            "opens_at": "not a date",
            "late_penalty_percent": "²",
            "late_policy": "whatever",
        },
    )
    schedule.refresh_from_db()
    assert (schedule.due_at, schedule.closes_at, schedule.opens_at) == (None, None, None)
    assert (schedule.late_policy, schedule.late_penalty_percent) == ("accept", 0)


@pytest.mark.usefixtures("quiz")
def test_a_run_page_needs_a_launch_into_its_course(placed, lab_members):
    learner, _staff = lab_members
    run = submit(placed, learner.user)
    from lti.models import Context, Membership

    other = Context.objects.create(context_id="elsewhere", title="Other course")
    elsewhere = Membership.objects.create(context=other, user=learner.user, role=Role.LEARNER)
    assert launched_client(elsewhere).get(f"/runs/{run.public_id}/").status_code == 403
    assert launched_client(learner).get(f"/runs/{run.public_id}/").status_code == 200


def test_moving_the_due_time_later_regrades_runs_that_were_late(placed, lab_members):
    learner, _ = lab_members
    now = timezone.now()
    services.update_schedule(placed, due_at=now - timedelta(hours=1), late_policy="refuse")
    measured_run(placed, learner.user, 1, now, score=Decimal("0.8"))
    services.refresh_lab_grade(user=learner.user, placement=placed)
    assert Grade.objects.get(user=learner.user).score_given == 0  # late, refused
    page = launched_client(learner)

    def shown_late() -> bool:
        return 'class="badge">late<' in page.get(f"/lab/{placed.pk}/").content.decode()

    assert shown_late()
    services.update_schedule(placed, due_at=now + timedelta(days=1))
    assert Grade.objects.get(user=learner.user).score_given == Decimal("80.000")
    # The lab's page says what the grade counted: on time now.
    assert not LabRun.objects.get().is_late
    assert not shown_late()
    services.update_schedule(placed, due_at=now - timedelta(minutes=1))
    assert LabRun.objects.get().is_late
    assert shown_late()
    assert Grade.objects.get(user=learner.user).score_given == 0


def test_a_run_whose_worker_dies_on_every_try_stops_being_retried(placed, lab_members, settings):
    learner, _ = lab_members
    settings.LAB_MAX_EXECUTION_ATTEMPTS = 2
    run = submit(placed, learner.user)
    for _ in range(2):
        assert services._claim(run.pk) is not None
        LabRun.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert services._claim(run.pk) is None
    assert LabRun.objects.get(pk=run.pk).status == RunStatus.INFRASTRUCTURE_FAILED


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("quiz")
def test_a_claim_that_meets_a_passing_lock_tries_again_soon(monkeypatch):
    """The student's next submission locks their runs for a moment; a worker arriving then
    must not drop the run until the periodic requeue."""
    import threading

    from django.db import connection, transaction

    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    run = submit(placement, learner.user)
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with transaction.atomic():
            LabRun.objects.select_for_update().get(pk=run.pk)
            locked.set()
            release.wait(10)
        connection.close()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    assert locked.wait(10)
    retries = []
    monkeypatch.setattr(jobs, "send", lambda _task_name, run_id, **when: retries.append(run_id))
    try:
        assert services.execute_run(run.pk) is None
    finally:
        release.set()
        holder.join()
    assert retries == [run.pk]
    # A run another worker holds (running, lease valid) is not retried.
    services._claim(run.pk)
    retries.clear()
    assert services.execute_run(run.pk) is None
    assert retries == []


def test_the_lab_page_says_when_runs_are_not_accepted(placed, lab_members):
    learner, _ = lab_members
    client = launched_client(learner)
    now = timezone.now()
    services.update_schedule(placed, opens_at=now + timedelta(days=1))
    page = client.get(f"/lab/{placed.pk}/").content.decode()
    assert 'id="window"' in page
    assert "This lab opens at" in page
    assert "Run this policy" not in page
    services.update_schedule(
        placed, opens_at=None, due_at=now - timedelta(days=1), late_policy="penalty",
        late_penalty_percent=30,
    )  # fmt: skip
    page = client.get(f"/lab/{placed.pk}/").content.decode()
    assert "with a 30% penalty" in page
    assert "Run this policy" in page
    services.update_schedule(placed, closes_at=now - timedelta(hours=1))
    page = client.get(f"/lab/{placed.pk}/").content.decode()
    assert "This lab is closed" in page
    assert "Run this policy" not in page


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("quiz")
def test_a_run_submitted_while_the_due_time_moves_is_late_by_the_new_one(monkeypatch):
    """A submission made while a move of the due time is uncommitted is judged by the due
    time in force once that commits: lateness is read, not stored at submission."""
    monkeypatch.setattr(jobs, "send", lambda *_, **when: True)
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    now = timezone.now()
    services.update_schedule(placement, due_at=now + timedelta(days=1))
    committed = hold_uncommitted(
        lambda: services.update_schedule(placement, due_at=now - timedelta(hours=1))
    )
    run = submit(placement, learner.user, now=now)
    committed()
    assert run.is_late
    assert LabRun.objects.get().is_late


def test_schedules_and_runs_are_not_edited_in_the_admin(placed, lab_members, client):
    """The admin would bypass the regrade; it shows schedules and runs only."""
    from django.contrib.auth import get_user_model

    learner, _ = lab_members
    run = submit(placed, learner.user)
    services.ensure_schedule(placed)
    admin = get_user_model().objects.create_superuser("root", "root@example.edu", "pw")
    client.force_login(admin, backend="django.contrib.auth.backends.ModelBackend")
    for path in (
        f"/admin/labs/labschedule/{placed.pk}/change/",
        f"/admin/labs/labrun/{run.pk}/change/",
    ):
        assert client.get(path).status_code == 200  # shown
        assert (
            client.post(path, {"due_at_0": "2030-01-01", "status": "succeeded"}).status_code == 403
        )
    assert client.get("/admin/labs/labrun/add/").status_code == 403
    assert LabRun.objects.get().status == RunStatus.QUEUED


@pytest.mark.usefixtures("db")
def test_a_bad_labs_file_is_refused_with_where_and_why(tmp_path):
    from io import StringIO

    import yaml
    from django.core.management import CommandError, call_command

    from labs.content import LABS_FILE
    from labs.models import Lab

    with pytest.raises(CommandError, match="cannot be read as YAML"):
        call_command("load_labs", str(tmp_path / "missing.yaml"), stdout=StringIO())
    entries = yaml.safe_load(LABS_FILE.read_text(encoding="utf-8"))
    entries[-1]["title"] = {"en": "Only English"}
    edited = tmp_path / "labs.yaml"
    edited.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    slug = entries[-1]["slug"]
    with pytest.raises(CommandError, match=rf"{slug}\.title: needs a text for each of en, ru"):
        call_command("load_labs", str(edited), stdout=StringIO())
    assert not Lab.objects.exists()  # nothing loaded, not even the valid labs before it


def test_a_schedule_saved_as_shown_keeps_its_seconds_and_regrades_no_one(placed, lab_members):
    """Found by review: the manage page shows times to the minute, so saving it unchanged cut
    a due time that had seconds (one placed by deep linking) and, the due time having moved,
    regraded the class: a run submitted in those seconds became late."""
    learner, staff = lab_members
    due = (timezone.now() + timedelta(days=1)).replace(second=42, microsecond=0)
    services.update_schedule(
        placed, due_at=due, late_policy=LatePolicy.PENALTY, late_penalty_percent=50
    )
    measured_run(placed, learner.user, 1, due - timedelta(seconds=10), score=Decimal("0.8"))
    recompute_placement(placement=placed, actor=None)
    assert Grade.objects.get(user=learner.user, placement=placed).score_given == 80
    changes = GradeChange.objects.count()
    instructor = launched_client(staff)
    page = instructor.get(f"/lab/{placed.pk}/manage/").content.decode()
    shown = re.search(r'name="due_at" value="([^"]+)"', page)[1]

    saved = instructor.post(
        f"/lab/{placed.pk}/manage/",
        {"due_at": shown, "late_policy": "penalty", "late_penalty_percent": "50"},
    )

    assert saved.status_code == 302
    assert LabSchedule.objects.get(pk=placed.pk).due_at == due
    assert GradeChange.objects.count() == changes
    assert Grade.objects.get(user=learner.user, placement=placed).score_given == 80
    moved = instructor.post(
        f"/lab/{placed.pk}/manage/",
        {"due_at": "2031-01-02T10:00", "late_policy": "penalty", "late_penalty_percent": "50"},
    )
    assert moved.status_code == 302
    assert LabSchedule.objects.get(pk=placed.pk).due_at.year == 2031  # a change still is one


def _best_run_then_a_worse_one(placed, user) -> None:
    """Runs of 0.9 and then 0.4, graded by the best: 90."""
    now = timezone.now()
    for number, score in ((1, "0.9"), (2, "0.4")):
        measured_run(placed, user, number, now + timedelta(minutes=number), score=Decimal(score))
    recompute_placement(placement=placed, actor=None)
    assert Grade.objects.get(user=user, placement=placed).score_given == 90


def test_a_labs_file_that_changes_a_default_regrades_the_placements_following_it(lab_members):
    """Found by review: loading an edited labs file saved a changed default grading method
    and left the grades of the placements following it by the old one, as the admin did
    before decision 91."""
    import dataclasses

    from labs.content import parse_labs

    learner, _ = lab_members
    content = parse_labs()[0]
    lab, _changed = services.load_lab(dataclasses.replace(content, grading_method="highest"))
    placed = lab_placement(learner.context, lab)
    _best_run_then_a_worse_one(placed, learner.user)

    services.load_lab(dataclasses.replace(content, grading_method="last"))

    assert Grade.objects.get(user=learner.user, placement=placed).score_given == 40
    assert GradeChange.objects.filter(cause=ChangeCause.SETTINGS).count() == 1


def _bad_last_lab(field, value):
    def edit(entries):
        if field == "seed":
            entries[-1]["model"]["seed"] = value
        elif field == "entry":
            entries[-1] = value
        elif field == "duplicate":
            entries[-1]["slug"] = entries[0]["slug"]
        else:
            entries[-1][field] = value

    return edit


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_runs", -1, r"max_runs: must be a whole number from 0 to 2147483647"),
        ("max_runs", "ten", r"max_runs: must be a whole number from 0 to 2147483647"),
        ("max_runs", True, r"max_runs: must be a whole number from 0 to 2147483647"),
        ("slug", "x" * 101, r"slug: must be a slug .* at most 100 characters"),
        ("slug", "two words", r"slug: must be a slug"),
        ("budget_bytes", 2**64, r"budget_bytes: must be a whole number from 1 to"),
        ("seed", 2**40, r"model\.seed: must be a whole number from"),
        ("entry", "just text", r"labs\[\d+\]: must be a mapping"),
        ("duplicate", None, r"slug: .* appears twice"),
    ],
)
@pytest.mark.usefixtures("db")
def test_a_labs_file_with_a_bad_last_lab_is_refused_and_loads_nothing(
    tmp_path, field, value, message
):
    """Found by review: a last lab with a run limit below zero or in words, an overlong
    slug or a budget past the database's integers was met by a traceback (an integrity,
    value, data or overflow error) instead of a message, with the labs before it loaded."""
    from io import StringIO

    import yaml
    from django.core.management import CommandError, call_command

    from labs.content import LABS_FILE

    entries = yaml.safe_load(LABS_FILE.read_text(encoding="utf-8"))
    _bad_last_lab(field, value)(entries)
    edited = tmp_path / "labs.yaml"
    edited.write_text(yaml.safe_dump(entries, allow_unicode=True), encoding="utf-8")
    with pytest.raises(CommandError, match=message):
        call_command("load_labs", str(edited), stdout=StringIO())
    assert not Lab.objects.exists()


@pytest.mark.usefixtures("db")
def test_a_labs_file_the_database_refuses_midway_loads_nothing_and_says_so():
    """The file's checks hold the columns' limits; a refusal they did not foresee (here a
    trigger of the database's own, on the file's last lab) still loads none of the file."""
    from io import StringIO

    from django.core.management import CommandError, call_command

    from labs.content import parse_labs

    refuse_inserts("labs_lab", "slug", parse_labs()[-1].slug)
    with pytest.raises(CommandError, match="the database refused the labs; none loaded"):
        call_command("load_labs", stdout=StringIO())
    assert not Lab.objects.exists()


# --- Found in review: the scoring --------------------------------------------------------


def test_the_runner_receives_exactly_the_text_the_service_validated(placed, lab_members):
    """The service re-serialised the policy with spaces, so a policy the form accepted
    could be refused by the runner as too long."""
    from labs import execution
    from labs.runner.policies import MAX_POLICY_CHARS, policy_text

    learner, _ = lab_members
    segments = [{"start": i, "end": i + 1, "checkpoint": i % 2 == 0} for i in range(8)]
    policy = {"kind": "boundaries", "segments": segments}
    run = submit(placed, learner.user, policy)
    command = execution.runner_command(
        placed.lab_placement.lab.model_spec(),
        policy_text(run.policy),
        placed.lab_placement.lab.budget_bytes,
        "cpu",
        1,
    )
    assert command[command.index("--policy") + 1] == policy_text(policy)
    # A text within the limit only with its spaces removed is validated in that form.
    padded = '{"kind": "none"' + " " * MAX_POLICY_CHARS + "}"
    with pytest.raises(InvalidPolicy, match="too long"):
        submit(placed, learner.user, padded)


@pytest.mark.torch
def test_a_run_is_graded_against_the_labs_stored_reference(placed, lab_members):
    """The reference (the optimum within the budget over every policy a student can
    submit) is computed once per lab and kept with it; runs are graded against it."""
    learner, _ = lab_members
    run = submit(placed, learner.user, {"kind": "segments", "size": 4})
    done = services.execute_run(run.pk)
    assert done.status == RunStatus.SUCCEEDED, done.error
    lab = placed.lab_placement.lab
    lab.refresh_from_db()
    reference = lab.reference
    assert reference["budget_bytes"] == lab.budget_bytes
    assert reference["version"] == 2
    assert done.result["within_budget"]
    assert done.result["grads_match"]
    assert done.result["optimal_recompute_flops"] == reference["optimal_recompute_flops"]
    assert done.result["score"] == pytest.approx(
        min(1, reference["optimal_recompute_flops"] / done.result["recompute_flops"])
    )
    assert "optimal_policy" not in done.result["reference"]  # the answer stays with the lab
    # A changed lab gets a new reference.
    from labs.content import parse_labs

    content = parse_labs()[0]
    loaded, _changed = services.load_lab(content)
    assert loaded.reference is None


@pytest.mark.torch
@pytest.mark.usefixtures("db")
def test_the_optimal_policy_is_shown_once_no_run_can_be_submitted(lab):
    # A real course: in the demo course nobody is trusted with the answer (the next test).
    course = Context.objects.create(context_id="real-course", title="Real")
    placed = lab_placement(course, lab)
    learner, staff = (
        Membership.objects.create(
            context=course,
            user=get_user_model().objects.create_user(username=f"real-{role}"),
            role=role,
        )
        for role in (Role.LEARNER, Role.STAFF)
    )
    run = submit(placed, learner.user, {"kind": "sqrt"})
    services.execute_run(run.pk)
    page = launched_client(learner)
    now = timezone.now()
    services.update_schedule(placed, due_at=now - timedelta(hours=1), late_policy="accept")
    html = page.get(f"/runs/{run.public_id}/").content.decode()
    assert 'id="optimal-policy"' not in html  # late runs are still accepted
    assert 'id="explanation"' in html
    assert (
        launched_client(staff)
        .get(f"/runs/{run.public_id}/")
        .content.decode()
        .count('id="optimal-policy"')
        == 1
    )
    services.update_schedule(placed, closes_at=now - timedelta(minutes=1))
    html = page.get(f"/runs/{run.public_id}/").content.decode()
    assert 'id="optimal-policy"' in html
    assert "checkpoint" in html


@pytest.mark.torch
@pytest.mark.usefixtures("quiz")
def test_demo_staff_never_see_the_optimal_policy(settings, client, lab):
    """Anyone may enter the demo as its instructor, and the demo places the lab real courses
    place: its optimal policy is the answer to their labs while they are open. So the demo
    never shows it, not even once its own lab is closed (its instructor can close it)."""
    settings.DEMO_ACTIVITIES = {**settings.DEMO_ACTIVITIES, "lab": f"lab:{lab.slug}"}
    lab_placement(Context.objects.create(context_id="real-course", title="Real"), lab, "real")
    assert client.post("/lti/demo/launch/", {"role": "staff", "activity": "lab"}).status_code == 302
    demo = ensure_demo_placement("lab")
    response = client.post(f"/lab/{demo.pk}/runs/", {"kind": "none"})
    assert response.status_code == 302, response.content
    run = services.execute_run(LabRun.objects.get(placement=demo).pk)
    assert run.status == RunStatus.SUCCEEDED, run.error
    html = client.get(response["Location"]).content.decode()
    assert 'id="explanation"' in html
    assert 'id="optimal-policy"' not in html
    closed = client.post(
        f"/lab/{demo.pk}/manage/",
        {
            "closes_at": (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
            "max_runs": 0,
            "grading_method": "highest",
            "late_policy": "accept",
            "late_penalty_percent": 0,
        },
    )
    assert closed.status_code == 302, closed.content
    assert LabSchedule.objects.get(placement=demo).closes_at is not None
    assert 'id="optimal-policy"' not in client.get(response["Location"]).content.decode()


@pytest.mark.torch
def test_runs_graded_by_the_first_scoring_keep_their_grade_until_measured_again(
    placed, lab_members
):
    from io import StringIO

    from django.core.management import call_command

    learner, _ = lab_members
    old = measured_run(
        placed,
        learner.user,
        1,
        timezone.now(),
        score=Decimal("1"),
        result={
            "score": 1.0, "grads_match": True, "within_budget": True, "recompute_flops": 10,
            "optimal_recompute_flops": None, "peak_activation_bytes": 1000,
            "budget_bytes": 4000, "baseline_peak_activation_bytes": 5000,
            "forward_flops": 100, "device": "cpu",
        },
    )  # fmt: skip
    html = launched_client(learner).get(f"/runs/{old.public_id}/").content.decode()
    assert 'id="graded-before"' in html
    assert "first scoring" in html
    out = StringIO()
    call_command("remeasure_lab_runs", stdout=out)
    assert "1 runs graded by an earlier scoring" in out.getvalue()
    assert LabRun.objects.get().status == RunStatus.SUCCEEDED  # counted, not queued
    call_command("remeasure_lab_runs", "--yes", stdout=out)
    assert LabRun.objects.get().status == RunStatus.QUEUED
    done = services.execute_run(old.pk)
    assert done.status == RunStatus.SUCCEEDED
    assert done.result["scoring_version"] == 2
    out = StringIO()
    call_command("remeasure_lab_runs", stdout=out)
    assert "0 runs graded by an earlier scoring" in out.getvalue()


def test_a_lab_default_changed_in_the_admin_regrades_the_placements_following_it(
    placed, lab_members, lab, admin_client, admin_user
):
    """Found by review: the quiz's admin regraded the placements that follow a changed
    default (decisions §28) and the lab's admin saved the lab alone, so its grades stayed
    by the old method until a student's next run."""
    learner, _ = lab_members
    _best_run_then_a_worse_one(placed, learner.user)

    data = unchanged_form_data(admin_user, Lab, lab) | {"grading_method": "last"}
    response = admin_client.post(reverse("admin:labs_lab_change", args=[lab.pk]), data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Grade.objects.get(user=learner.user, placement=placed).score_given == 40
    assert GradeChange.objects.filter(cause=ChangeCause.SETTINGS).count() == 1


def test_the_admin_cannot_change_what_a_lab_measures(lab, admin_client, admin_user):
    """Found by review: the lab's admin form offered its model and budget as fields. Changed
    there, the lab kept the reference measured for the old model (only a new budget made it
    measure again), and runs were graded against it; its content hash no longer said what it
    held. A lab's content comes from its file (load_labs), which empties the reference; its
    wording can still be corrected there, as a quiz's can."""
    lab.reference = {"kept": True}
    lab.save()
    data = unchanged_form_data(admin_user, Lab, lab) | {
        "blocks": 4,
        "width": 32,
        "model_kind": "transformer",
        "budget_bytes": 1,
        "reference": "{}",
        "content_hash": "changed",
        "title": '{"en": "Tiny chain, corrected", "ru": "Маленькая цепочка"}',
    }
    change_page = reverse("admin:labs_lab_change", args=[lab.pk])
    assert admin_client.get(change_page).status_code == 200  # shown
    admin_client.post(change_page, data)

    lab.refresh_from_db()
    assert (lab.blocks, lab.width, lab.model_kind) == (8, 16, "chain")
    assert (lab.reference, lab.content_hash, lab.budget_bytes) == ({"kept": True}, "test", 3592)
    assert lab.title["en"] == "Tiny chain, corrected"  # its wording can be corrected
