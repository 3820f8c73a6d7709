"""The Celery app. Workers run with ``celery -A convmem worker``; beat with ``-B`` or separately."""

import os
import warnings
from typing import Any

from celery import Celery
from celery.exceptions import SecurityWarning
from celery.signals import task_postrun, task_prerun

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


# Database connections live as long as they would in a web process. Celery's Django fixup closes
# every connection before and after each task (ignoring ``CONN_MAX_AGE``) unless
# ``CELERY_DB_REUSE_MAX`` is set, which the settings do; so each task, ``respond.generate``
# included, opened a PostgreSQL connection (a backend start, then its cold catalog caches:
# ~20-35 ms before an answer's first token on the shared 2-core VM). Instead each task is one
# "request" for Django: ``close_old_connections`` before and after it closes a connection older
# than ``CONN_MAX_AGE`` (0: after every task, as before) or broken, and re-checks it
# (``CONN_HEALTH_CHECKS``) at its first use.


@task_prerun.connect
@task_postrun.connect
def _connections_recycle(task: Any = None, **_: Any) -> None:
    """Not for a task run eagerly (``apply()``, inside the caller's own request or
    transaction): closing connections there would break the caller's transaction, which is
    why Celery's fixup skips eager tasks too."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()
