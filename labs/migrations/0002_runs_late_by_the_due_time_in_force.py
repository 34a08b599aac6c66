"""Runs' late marks follow the due time in force (labs.services.update_schedule keeps them
so from now on); runs made before a due time moved kept the mark from their submission."""

from django.db import migrations
from django.db.models import Case, OuterRef, Subquery, When


def mark_late_by_the_due_time_in_force(apps, schema_editor):
    LabRun = apps.get_model("labs", "LabRun")
    LabSchedule = apps.get_model("labs", "LabSchedule")
    due = LabSchedule.objects.filter(pk=OuterRef("placement_id")).values("due_at")[:1]
    # No due time (no schedule, or none set) compares as NULL: not late.
    LabRun.objects.update(
        is_late=Case(When(submitted_at__gt=Subquery(due), then=True), default=False)
    )


class Migration(migrations.Migration):
    dependencies = [("labs", "0001_initial")]

    operations = [
        migrations.RunPython(mark_late_by_the_due_time_in_force, migrations.RunPython.noop)
    ]
