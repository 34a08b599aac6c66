
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('assessments', '0007_grade_user_activity_grades'),
        ('gradesync', '0002_grade_moved_to_activities'),
    ]

    operations = [
        # State only: the grade models moved to activities with their tables (activities 0001).
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='gradeoverride',
                    name='grade',
                ),
                migrations.RemoveField(
                    model_name='gradechange',
                    name='grade',
                ),
                migrations.RemoveField(
                    model_name='gradechange',
                    name='actor',
                ),
                migrations.RemoveField(
                    model_name='gradechange',
                    name='placement',
                ),
                migrations.RemoveField(
                    model_name='gradechange',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='gradeoverride',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='regrade',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='regrade',
                    name='placement',
                ),
                migrations.DeleteModel(
                    name='Grade',
                ),
                migrations.DeleteModel(
                    name='GradeChange',
                ),
                migrations.DeleteModel(
                    name='GradeOverride',
                ),
                migrations.DeleteModel(
                    name='Regrade',
                ),
            ],
            database_operations=[],
        ),
    ]
