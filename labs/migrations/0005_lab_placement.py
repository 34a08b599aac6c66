# The labs app owns the row that says a resource link places a lab (docs/decisions.md §45),
# copied from lti.ResourceLink.lab before lti 0005 drops that column.

import django.db.models.deletion
from django.db import migrations, models


def copy_links(apps, schema_editor) -> None:
    links = apps.get_model("lti", "ResourceLink").objects.filter(lab__isnull=False)
    placement = apps.get_model("labs", "LabPlacement")
    placement.objects.bulk_create(
        placement(resource_link_id=pk, lab_id=lab_id)
        for pk, lab_id in links.values_list("pk", "lab_id").iterator()
    )


def copy_links_back(apps, schema_editor) -> None:
    links = apps.get_model("lti", "ResourceLink").objects
    for row in apps.get_model("labs", "LabPlacement").objects.iterator():
        links.filter(pk=row.resource_link_id).update(lab_id=row.lab_id)


class Migration(migrations.Migration):

    dependencies = [
        ('labs', '0004_late_is_derived_from_the_due_time_in_force'),
        ('lti', '0004_resource_link_places_any_activity'),
    ]
    # The column is read here before lti drops it (lti depends on no app above it).
    run_before = [
        ('lti', '0005_resource_link_is_the_protocol_only'),
    ]

    operations = [
        migrations.CreateModel(
            name='LabPlacement',
            fields=[
                ('resource_link', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='lab_placement', serialize=False, to='lti.resourcelink')),
                ('lab', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='placements', to='labs.lab')),
            ],
        ),
        migrations.RunPython(copy_links, copy_links_back),
    ]
