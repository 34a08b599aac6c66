
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('activities', '0001_grades_from_assessments'),
        ('gradesync', '0001_initial'),
    ]

    operations = [
        # State only: the grade models moved to activities with their tables (activities 0001).
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='gradesync',
                    name='grade',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='syncs', to='activities.grade'),
                ),
            ],
            database_operations=[],
        ),
    ]
