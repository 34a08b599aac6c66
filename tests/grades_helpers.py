"""A course placed from a (fake) LMS that offers AGS, with students who launched from it."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from activities.services import place_activity
from assessments.models import Quiz
from labs.models import Lab
from lti import claims as c
from lti.models import Context, Deployment, LtiUser, Membership, Registration, ResourceLink

from .fake_lms import FakeLms


def graded_placement(
    lms: FakeLms,
    activity: Quiz | Lab,
    *,
    lineitem: bool = True,
    scopes: list[str] | None = None,
    product: str = "moodle",
) -> ResourceLink:
    registration = Registration.objects.create(
        issuer=lms.base,
        client_id=lms.client_id,
        auth_login_url=lms.url("/auth"),
        auth_token_url=lms.url("/token"),
        keyset_url=lms.url("/jwks"),
        product_family_code=product,
    )
    deployment = Deployment.objects.create(registration=registration, deployment_id="1")
    context = Context.objects.create(
        deployment=deployment, context_id="course-1", title="DLS", nrps_url=lms.url("/memberships")
    )
    is_quiz = isinstance(activity, Quiz)
    link = ResourceLink(
        context=context,
        resource_link_id="rl-1",
        title="Quiz" if is_quiz else "Lab",
        lineitem_url=lms.add_lineitem("rl-1") if lineitem else "",
        ags_lineitems_url=lms.url("/lineitems"),
        ags_scopes=c.TOOL_SCOPES if scopes is None else scopes,
    )
    place_activity(link, f"{'quiz' if is_quiz else 'lab'}:{activity.slug}")
    return link


def student(placement: ResourceLink, sub: str):
    user = get_user_model().objects.create_user(username=f"lti-{sub}")
    LtiUser.objects.create(
        registration=placement.context.deployment.registration, sub=sub, user=user
    )
    Membership.objects.create(context=placement.context, user=user, has_launched=True)
    return user


def finish_attempt(user, placement: ResourceLink, correct: int) -> None:
    """The student answers every question, the first `correct` of them right."""
    from .quiz_helpers import started_attempt, submit

    attempt = started_attempt(user, placement)
    for question in attempt.quiz_version.questions.order_by("position"):
        option = question.options.filter(is_correct=question.position <= correct).first()
        submit(user, placement, attempt, option)
