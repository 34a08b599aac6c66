# The quiz app owns the row that says a resource link places a quiz (docs/decisions.md §45),
# copied from lti.ResourceLink.quiz before lti 0005 drops that column.

import django.db.models.deletion
from django.db import migrations, models


def copy_links(apps, schema_editor) -> None:
    links = apps.get_model("lti", "ResourceLink").objects.filter(quiz__isnull=False)
    placement = apps.get_model("assessments", "QuizPlacement")
    placement.objects.bulk_create(
        placement(resource_link_id=pk, quiz_id=quiz_id)
        for pk, quiz_id in links.values_list("pk", "quiz_id").iterator()
    )


def copy_links_back(apps, schema_editor) -> None:
    links = apps.get_model("lti", "ResourceLink").objects
    for row in apps.get_model("assessments", "QuizPlacement").objects.iterator():
        links.filter(pk=row.resource_link_id).update(quiz_id=row.quiz_id)


class Migration(migrations.Migration):

    dependencies = [
        ('assessments', '0008_grades_moved_to_activities'),
        ('lti', '0004_resource_link_places_any_activity'),
    ]
    # The column is read here before lti drops it (lti depends on no app above it).
    run_before = [
        ('lti', '0005_resource_link_is_the_protocol_only'),
    ]

    operations = [
        migrations.CreateModel(
            name='QuizPlacement',
            fields=[
                ('resource_link', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='quiz_placement', serialize=False, to='lti.resourcelink')),
                ('quiz', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='placements', to='assessments.quiz')),
            ],
        ),
        migrations.RunPython(copy_links, copy_links_back),
    ]
