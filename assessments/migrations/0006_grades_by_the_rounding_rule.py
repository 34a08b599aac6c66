"""Grades stored before the one rounding rule (docs/decisions.md §27) had three decimals:
round them half up to two, and queue each changed one for the LMS (a pending outbox row,
which the periodic requeue delivers), so the gradebook holds the number the pages show."""

from decimal import ROUND_HALF_UP, Decimal

from django.db import migrations
from django.utils import timezone

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


def round_grades(apps, schema_editor):
    Grade = apps.get_model("assessments", "Grade")
    GradeSync = apps.get_model("gradesync", "GradeSync")
    now = timezone.now()
    for grade in Grade.objects.select_related("placement__context").iterator():
        rounded = grade.score_given.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        if rounded == grade.score_given:
            continue
        grade.score_given = rounded
        grade.updated_at = now
        grade.save(update_fields=["score_given", "updated_at"])
        placement = grade.placement
        syncable = (
            placement.context.deployment_id is not None
            and (placement.lineitem_url or placement.ags_lineitems_url)
            and SCORE_SCOPE in (placement.ags_scopes or [])
        )
        if syncable:
            GradeSync.objects.create(
                grade=grade,
                user_id=grade.user_id,
                placement=placement,
                score_given=rounded,
                score_maximum=grade.score_maximum,
                changed_at=now,
                next_attempt_at=now,
            )


class Migration(migrations.Migration):
    dependencies = [
        ("assessments", "0005_gradebook"),
        ("gradesync", "0001_initial"),
    ]

    operations = [migrations.RunPython(round_grades, migrations.RunPython.noop)]
