"""The Celery app. Workers run with ``celery -A convmem worker``; beat with ``-B`` or separately."""

import os
import warnings

from celery import Celery
from celery.exceptions import SecurityWarning

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")

if os.environ.get("CONVMEM_DEV_SERVER") == "1":
    # ``dev.py serve`` in a container runs as root; the warning is for deployments.
    warnings.filterwarnings(
        "ignore",
        message="You're running the worker with superuser privileges",
        category=SecurityWarning,
    )

app = Celery("convmem")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
