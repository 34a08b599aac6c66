# The course side takes the placement's kind and policy from lti.ResourceLink
# (docs/decisions.md §45): a Placement row per link, copied before lti 0005 drops the columns.

import django.db.models.deletion
from django.db import migrations, models


def copy_policy(apps, schema_editor) -> None:
    """Every resource link that places a quiz or a lab gets its Placement: the kind and the
    attempt limit and grading method it overrode (null and "" where it follows the
    activity's defaults)."""
    links = apps.get_model("lti", "ResourceLink").objects
    placement = apps.get_model("activities", "Placement")
    rows = links.filter(models.Q(quiz__isnull=False) | models.Q(lab__isnull=False)).values_list(
        "pk", "quiz_id", "max_attempts", "grading_method"
    )
    placement.objects.bulk_create(
        placement(
            resource_link_id=pk,
            kind="quiz" if quiz_id is not None else "lab",
            max_attempts=max_attempts,
            grading_method=grading_method,
        )
        for pk, quiz_id, max_attempts, grading_method in rows.iterator()
    )


def copy_policy_back(apps, schema_editor) -> None:
    links = apps.get_model("lti", "ResourceLink").objects
    for row in apps.get_model("activities", "Placement").objects.iterator():
        links.filter(pk=row.resource_link_id).update(
            max_attempts=row.max_attempts, grading_method=row.grading_method
        )


class Migration(migrations.Migration):

    dependencies = [
        ('activities', '0001_grades_from_assessments'),
        ('lti', '0004_resource_link_places_any_activity'),
    ]
    # The columns are read here before lti drops them (lti depends on no app above it).
    run_before = [
        ('lti', '0005_resource_link_is_the_protocol_only'),
    ]

    operations = [
        migrations.CreateModel(
            name='Placement',
            fields=[
                ('resource_link', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='placement', serialize=False, to='lti.resourcelink')),
                ('kind', models.CharField(help_text="The activity kind's registry key.", max_length=32)),
                ('max_attempts', models.PositiveIntegerField(blank=True, help_text="Overrides the activity's limit of attempts (quiz) or runs (lab); 0: no limit.", null=True)),
                ('grading_method', models.CharField(blank=True, choices=[('highest', 'Highest attempt'), ('last', 'Last attempt'), ('first', 'First attempt'), ('average', 'Average of attempts')], help_text="Overrides the activity's grading method.", max_length=16)),
            ],
        ),
        migrations.RunPython(copy_policy, copy_policy_back),
    ]
