# The course side takes the grades (docs/decisions.md: "The course side"): state only, tables kept.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MOVED = ("grade", "gradeoverride", "regrade", "gradechange")


def _relabel(apps, source: str, target: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType")
    content_types.objects.filter(app_label=source, model__in=MOVED).update(app_label=target)


def move_content_types(apps, schema_editor) -> None:
    """Admin permissions and log entries follow the models to their new app."""
    _relabel(apps, "assessments", "activities")


def move_content_types_back(apps, schema_editor) -> None:
    _relabel(apps, "activities", "assessments")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('assessments', '0007_grade_user_activity_grades'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('lti', '0004_resource_link_places_any_activity'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The grade models moved here from assessments; their tables keep their names, so
        # only Django's state changes (assessments 0008 drops them from its state).
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='Grade',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('score_given', models.DecimalField(decimal_places=3, max_digits=9)),
                    ('score_maximum', models.DecimalField(decimal_places=3, max_digits=9)),
                    ('grading_method', models.CharField(choices=[('highest', 'Highest attempt'), ('last', 'Last attempt'), ('first', 'First attempt'), ('average', 'Average of attempts')], max_length=16)),
                    ('attempt_count', models.PositiveIntegerField()),
                    ('counted_number', models.PositiveIntegerField(blank=True, help_text='The attempt or run the grade came from (not averages).', null=True)),
                    ('is_overridden', models.BooleanField(default=False, help_text='Set by staff; attempts no longer change it.')),
                    ('override_reason', models.TextField(blank=True)),
                    ('override_reason_shared', models.BooleanField(default=False, help_text="The student sees the override's reason.")),
                    ('updated_at', models.DateTimeField()),
                    ('placement', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='grades', to='lti.resourcelink')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='activity_grades', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'assessments_grade',
                },
            ),
            migrations.CreateModel(
                name='GradeChange',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('cause', models.CharField(choices=[('override', 'Override'), ('override_cleared', 'Override cleared'), ('regrade', 'Regrade'), ('settings', 'Grading settings changed'), ('due_time', 'Due time reached')], max_length=24)),
                    ('previous_score', models.DecimalField(blank=True, decimal_places=3, max_digits=9, null=True)),
                    ('new_score', models.DecimalField(decimal_places=3, max_digits=9)),
                    ('score_maximum', models.DecimalField(decimal_places=3, max_digits=9)),
                    ('was_overridden', models.BooleanField(default=False)),
                    ('is_overridden', models.BooleanField(default=False)),
                    ('reason', models.TextField(blank=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('actor', models.ForeignKey(blank=True, help_text='Empty when the schedule made the change (a due time reached).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('grade', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='changes', to='activities.grade')),
                    ('placement', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='lti.resourcelink')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'assessments_gradechange',
                    'ordering': ['-created_at', '-pk'],
                },
            ),
            migrations.CreateModel(
                name='GradeOverride',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('previous_score', models.DecimalField(blank=True, decimal_places=3, max_digits=9, null=True)),
                    ('score_given', models.DecimalField(decimal_places=3, max_digits=9)),
                    ('reason', models.TextField()),
                    ('share_reason', models.BooleanField(default=False)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('created_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('grade', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='overrides', to='activities.grade')),
                ],
                options={
                    'db_table': 'assessments_gradeoverride',
                    'ordering': ['-created_at', '-pk'],
                },
            ),
            migrations.CreateModel(
                name='Regrade',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('cause', models.CharField(choices=[('override', 'Override'), ('override_cleared', 'Override cleared'), ('regrade', 'Regrade'), ('settings', 'Grading settings changed'), ('due_time', 'Due time reached')], default='regrade', max_length=24)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('attempts_changed', models.PositiveIntegerField(default=0)),
                    ('grades_changed', models.PositiveIntegerField(default=0)),
                    ('report', models.JSONField(default=list, help_text='Per changed attempt: old and new score.')),
                    ('grades_report', models.JSONField(default=list, help_text='Per changed grade: the student, old and new score.')),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('placement', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='regrades', to='lti.resourcelink')),
                ],
                options={
                    'db_table': 'assessments_regrade',
                    'ordering': ['-created_at', '-pk'],
                },
            ),
            migrations.AddConstraint(
                model_name='grade',
                constraint=models.UniqueConstraint(fields=('user', 'placement'), name='grade_one_per_placement'),
            ),
            migrations.AddIndex(
                model_name='gradechange',
                index=models.Index(fields=['placement', 'user'], name='grade_change_student'),
            ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
