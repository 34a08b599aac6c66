"""The Celery application.

Configuration comes from Django settings (the ``CELERY_`` namespace), so the web
process, the workers and beat read one source of truth: the environment.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("gcquiz")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
