"""The Celery app. Workers run with ``celery -A convmem worker``; beat with ``-B`` or separately."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")

app = Celery("convmem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
