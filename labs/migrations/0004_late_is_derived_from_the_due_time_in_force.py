"""A run's lateness is derived when read (labs.models.LabRunManager), from its submission
time and the due time in force: the stored mark, kept in step by re-marking every run when
the due time moved, goes."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('labs', '0003_lab_reference'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='labrun',
            name='is_late',
        ),
    ]
