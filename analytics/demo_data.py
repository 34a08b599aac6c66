"""Realistic demo data for the dashboards: students of varying ability answering the quiz
by an item-response model, so the statistics mean something (strong students score high,
hard questions are hard, one distractor attracts the strong)."""

from __future__ import annotations

import math
import random
import secrets
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from assessments.grading import grade_fraction, round_grade
from assessments.models import Attempt, AttemptState, Grade, Response
from assessments.selectors import attempt_policy
from lti.models import Membership, ResourceLink, Role

BATCH = 5000
FIRST_NAMES = ["Alex", "Sasha", "Maria", "Ivan", "Li", "Priya", "Omar", "Anna", "Jonas", "Mei"]
LAST_NAMES = ["Ivanova", "Smith", "Chen", "Kumar", "Petrov", "García", "Novak", "Sato", "Okafor"]


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
    questions = list(placement.quiz.current_version.questions.prefetch_related("options"))
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
    users = User.objects.bulk_create(
        [
            User(
                username=f"demo-{tag}-{n:06d}",
                first_name=rng.choice(FIRST_NAMES),
                last_name=rng.choice(LAST_NAMES),
                password="!",  # unusable: demo students never sign in with a password
            )
            for n in range(students)
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
    for user in users:
        if rng.random() < absent_share:
            continue  # on the roster, never started
        ability = rng.gauss(0, 1)
        language = "ru" if rng.random() < 0.3 else "en"
        tries = 2 if rng.random() < retake_share else 1
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
                    quiz_version_id=placement.quiz.current_version_id,
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
