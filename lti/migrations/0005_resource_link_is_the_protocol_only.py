# A resource link is the LTI claim only: what it places and by which rules moved to the
# course side (activities 0002, assessments 0009, labs 0005 copy the columns first: they
# name this migration in run_before, so lti depends on no app above it).

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('lti', '0004_resource_link_places_any_activity'),
    ]

    operations = [
        migrations.RemoveField(model_name='resourcelink', name='quiz'),
        migrations.RemoveField(model_name='resourcelink', name='lab'),
        migrations.RemoveField(model_name='resourcelink', name='max_attempts'),
        migrations.RemoveField(model_name='resourcelink', name='grading_method'),
    ]
