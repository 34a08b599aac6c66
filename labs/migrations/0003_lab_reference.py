"""Labs keep the optimum their runs are graded against (computed once per lab)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("labs", "0002_runs_late_by_the_due_time_in_force")]

    operations = [
        migrations.AddField(
            model_name="lab",
            name="reference",
            field=models.JSONField(
                blank=True,
                help_text="The optimum within the budget that runs are graded against "
                "(labs.runner.reference), computed once; emptied when the lab changes.",
                null=True,
            ),
        ),
    ]
