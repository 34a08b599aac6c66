from decimal import Decimal

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from activities.access import member_placement
from activities.grading import grade_by_method
from activities.models import GradingMethod
from activities.services import set_placement_grade
from lti.access import launch_required

from .activity import EXERCISE
from .models import Submission


@require_http_methods(["GET", "POST"])
@launch_required
def placement(request: HttpRequest, placement_id: int) -> HttpResponse:
    found, _role = member_placement(request, placement_id, "exercise")
    exercise = EXERCISE.activity_of(found)
    if request.method == "POST":
        answer = request.POST.get("answer", "").strip()
        mine = Submission.objects.filter(placement=found, user=request.user)
        Submission.objects.create(
            placement=found,
            user=request.user,
            number=mine.count() + 1,
            answer=answer,
            score=exercise.points if answer == exercise.answer else 0,
            exercise_points=exercise.points,
        )
        fractions = [
            (row.number, row.score / row.exercise_points) for row in mine.order_by("number")
        ]
        computed = grade_by_method(GradingMethod.HIGHEST, fractions)
        set_placement_grade(
            user=request.user,
            placement_id=found.pk,
            fraction=computed.fraction,
            score_maximum=Decimal(exercise.points),
            grading_method=GradingMethod.HIGHEST,
            counted=computed.counted,
            counted_number=computed.counted_number,
        )
        return redirect("kind_app:placement", placement_id=found.pk)
    return render(
        request,
        "kind_app/placement.html",
        {"title": EXERCISE.title_of(exercise, "en"), "placement": found},
    )
