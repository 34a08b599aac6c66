"""Realistic demo data for the dashboards: students of varying ability answering the quiz
by an item-response model, so the statistics mean something (strong students score high,
hard questions are hard, one distractor attracts the strong)."""

from __future__ import annotations

import math
import random
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from activities.grading import grade_fraction, round_grade
from activities.models import Grade
from assessments.models import Attempt, AttemptState, Response
from assessments.selectors import attempt_policy, placed_quiz
from lti.demo_names import distinct_names
from lti.models import Membership, ResourceLink, Role

BATCH = 5000
RUSSIAN_SHARE = 0.3


@dataclass(frozen=True)
class DemoData:
    students: int
    attempts: int
    responses: int


def _correct_probability(ability: float, difficulty: float, discrimination: float) -> float:
    return 1 / (1 + math.exp(-discrimination * (ability - difficulty)))


@transaction.atomic
def generate_demo_data(
    placement: ResourceLink,
    students: int,
    *,
    seed: int = 0,
    days: int = 14,
    absent_share: float = 0.05,
    retake_share: float = 0.2,
) -> DemoData:
    """Add ``students`` learners to the placement's course; some never start
    (``absent_share``), some take the quiz twice (``retake_share``). Written with bulk
    inserts (seconds for 20,000 students)."""
    rng = random.Random(seed)
    quiz = placed_quiz(placement)
    questions = list(quiz.current_version.questions.prefetch_related("options"))
    # Per question: difficulty, discrimination, and how attractive each wrong option is.
    profile = {
        q.pk: (
            rng.uniform(-1.5, 1.2),
            rng.uniform(0.6, 2.0),
            [rng.random() ** 2 for _ in q.options.all()],
        )
        for q in questions
    }
    tag = secrets.token_hex(3)
    now = timezone.now()
    User = get_user_model()
    # Each student's language (the one they take the quiz in) and a name that fits it;
    # no two students share a name.
    languages = ["ru" if rng.random() < RUSSIAN_SHARE else "en" for _ in range(students)]
    names = {language: distinct_names(rng, language) for language in ("en", "ru")}
    users = User.objects.bulk_create(
        [
            User(
                username=f"demo-{tag}-{n:06d}",
                first_name=first,
                last_name=last,
                password="!",  # unusable: demo students never sign in with a password
            )
            for n, (first, last) in enumerate(next(names[language]) for language in languages)
        ],
        batch_size=BATCH,
    )
    Membership.objects.bulk_create(
        [
            Membership(
                context_id=placement.context_id,
                user=user,
                role=Role.LEARNER,
                roles=["Learner"],
                has_launched=True,
            )
            for user in users
        ],
        batch_size=BATCH,
    )
    attempts: list[Attempt] = []
    answers: list[list[tuple]] = []
    for user, language in zip(users, languages, strict=True):
        if rng.random() < absent_share:
            continue  # on the roster, never started
        ability = rng.gauss(0, 1)
        tries = 2 if rng.random() < retake_share else 1
        # Laid out from a start in the past, then moved back as a whole if the student's
        # last answer would fall in the future: every date is in the past.
        first_attempt = len(attempts)
        started = now - timedelta(days=rng.uniform(0, days))
        for number in range(1, tries + 1):
            chosen = []
            moment = started
            for question in questions:
                difficulty, discrimination, pull = profile[question.pk]
                moment += timedelta(seconds=rng.lognormvariate(3.3, 0.5))
                options = list(question.options.all())
                if rng.random() < _correct_probability(
                    ability + 0.3 * (number - 1), difficulty, discrimination
                ):
                    option = next(o for o in options if o.is_correct)
                else:
                    wrong = [(o, w) for o, w in zip(options, pull, strict=True) if not o.is_correct]
                    option = rng.choices([o for o, _ in wrong], [w for _, w in wrong])[0]
                chosen.append((question, option, moment))
            score = sum(option.is_correct for _q, option, _m in chosen)
            attempts.append(
                Attempt(
                    user=user,
                    placement=placement,
                    quiz_version_id=quiz.current_version_id,
                    number=number,
                    state=AttemptState.FINISHED,
                    language=language,
                    option_order={},
                    started_at=started,
                    finished_at=moment,
                    score=score,
                    max_score=len(questions),
                )
            )
            answers.append(chosen)
            started = moment + timedelta(hours=rng.uniform(1, 48))
        overshoot = attempts[-1].finished_at - (now - timedelta(minutes=rng.uniform(5, 120)))
        if overshoot > timedelta(0):
            for attempt, chosen in zip(
                attempts[first_attempt:], answers[first_attempt:], strict=True
            ):
                attempt.started_at -= overshoot
                attempt.finished_at -= overshoot
                chosen[:] = [(q, o, moment - overshoot) for q, o, moment in chosen]
    last: dict[int, Attempt] = {}
    highest: dict[int, Attempt] = {}
    for attempt in attempts:  # in order of number per student
        last[attempt.user_id] = attempt
        if attempt.user_id not in highest or attempt.score > highest[attempt.user_id].score:
            highest[attempt.user_id] = attempt
    for attempt in last.values():
        attempt.is_last_finished = True
    for attempt in highest.values():
        attempt.is_highest = True
    Attempt.objects.bulk_create(attempts, batch_size=BATCH)
    responses = []
    for attempt, chosen in zip(attempts, answers, strict=True):
        previous = attempt.started_at
        for question, option, moment in chosen:
            responses.append(
                Response(
                    attempt=attempt,
                    question=question,
                    option=option,
                    is_correct=option.is_correct,
                    answered_at=moment,
                    seconds_spent=round((moment - previous).total_seconds()),
                )
            )
            previous = moment
    Response.objects.bulk_create(responses, batch_size=BATCH)
    method = attempt_policy(placement).grading_method
    maximum = Decimal(len(questions))
    tries: dict[int, list[Attempt]] = {}
    for attempt in attempts:  # in order of number per student
        tries.setdefault(attempt.user_id, []).append(attempt)
    Grade.objects.bulk_create(
        [
            Grade(
                user_id=user_id,
                placement=placement,
                score_given=round_grade(
                    grade_fraction(method, [Decimal(a.score) / maximum for a in finished]) * maximum
                ),
                score_maximum=maximum,
                grading_method=method,
                attempt_count=len(finished),
                updated_at=finished[-1].finished_at,
            )
            for user_id, finished in tries.items()
        ],
        batch_size=BATCH,
    )
    return DemoData(students=students, attempts=len(attempts), responses=len(responses))


# A class's first tries at the demo lab: the usual first ideas, from none at all to the
# √N schedule and segment sizes around it (the runner measures each once).
DEMO_LAB_POLICIES: tuple[dict, ...] = (
    {"kind": "none"},
    {"kind": "every_block"},
    {"kind": "sqrt"},
    {"kind": "segments", "size": 4},
    {"kind": "segments", "size": 16},
)


class DemoLabError(RuntimeError):
    """The runner could not measure the demo policies (the labs extra is missing?)."""


def generate_demo_lab_runs(
    placement: ResourceLink,
    *,
    seed: int = 0,
    share: float = 0.6,
    days: int = 14,
    policies: tuple[dict, ...] = DEMO_LAB_POLICIES,
) -> int:
    """Runs of the lab by a ``share`` of the course's students (one to three each, the later
    ones better on the whole), so the lab dashboard has a class. Each distinct policy is
    measured once by the real runner in a child process (the web process never imports
    torch); every student's run then goes through the labs services with those stored
    figures, which grade it and keep the gradebook as a worker would. Returns runs made."""
    from labs import execution
    from labs.models import LabRun, RunStatus
    from labs.runner.policies import policy_text
    from labs.selectors import placed_lab
    from labs.services import ensure_reference, record_outcome

    rng = random.Random(seed)
    lab = placed_lab(placement)
    reference = ensure_reference(lab)  # computed once per lab, as for a student's run
    measured = []
    for policy in policies:
        outcome = execution.execute(
            lab.model_spec(),
            policy_text(policy),
            lab.budget_bytes,
            reference=reference,
            device="cpu",
            repeats=1,
            timeout_seconds=settings.LAB_RUN_TIMEOUT_SECONDS,
            memory_cap_bytes=settings.LAB_MEMORY_CAP_BYTES,
        )
        if outcome.kind == execution.OutcomeKind.MEASURED:
            measured.append((policy, outcome))
    if not measured:
        raise DemoLabError("the runner measured none of the demo policies")
    # Ordered worst first, so a student's later runs tend to score better.
    measured.sort(key=lambda item: float(item[1].result.get("score", 0)))
    learners = list(
        Membership.objects.filter(context_id=placement.context_id, role=Role.LEARNER)
        .exclude(user__lab_runs__placement=placement)
        .order_by("pk")
        .values_list("user_id", flat=True)
    )
    now = timezone.now()
    made = 0
    for user_id in rng.sample(learners, round(share * len(learners))):
        tries = rng.choice((1, 1, 2, 3))
        level = rng.randrange(len(measured))
        moment = now - timedelta(days=rng.uniform(0.2, days))
        for number in range(1, tries + 1):
            policy, outcome = measured[min(level + number - 1, len(measured) - 1)]
            started = moment + timedelta(seconds=rng.uniform(1, 20))
            with transaction.atomic():
                run = LabRun.objects.create(
                    placement=placement,
                    user_id=user_id,
                    number=number,
                    policy=policy,
                    submitted_at=moment,
                    next_attempt_at=moment,
                    enqueued_at=moment,
                    status=RunStatus.RUNNING,
                    execution_attempts=1,
                    lease_token=uuid.uuid4(),
                    lease_until=now + timedelta(minutes=5),
                    started_at=started,
                )
                record_outcome(run, outcome)
                # The figures were measured once for all; the run's own times are its own.
                LabRun.objects.filter(pk=run.pk).update(
                    finished_at=started + timedelta(seconds=rng.uniform(2, 6))
                )
            made += 1
            moment = min(started + timedelta(hours=rng.uniform(0.5, 30)), now)
    return made
