# Grade sync and lab runs share one leased-job helper (ops.jobs, docs/decisions.md §40): its
# lease column has one name in both, the one lab runs already used.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('gradesync', '0002_grade_moved_to_activities'),
    ]

    operations = [
        migrations.RenameField(
            model_name='gradesync',
            old_name='claimed_until',
            new_name='lease_until',
        ),
    ]
