from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate, pre_migrate


def _ensure_search_index(using: str, **kwargs: Any) -> None:
    """Recreate search triggers a table rebuild may have dropped (see ``threads.search``), and
    the SQLite append view from the current columns (``threads.append_view``)."""
    from threads.append_view import append_view_ensure
    from threads.search import search_index_ensure

    connection = connections[using]
    tables = connection.introspection.table_names()
    if "threads_message" in tables:
        search_index_ensure(connection)
    if {"threads_message", "auditlog_auditevent"} <= set(tables):
        append_view_ensure(connection)


def _drop_append_view(using: str, **kwargs: Any) -> None:
    """Out of the way of table rebuilds while migrating (see ``threads.append_view``)."""
    from threads.append_view import append_view_drop

    append_view_drop(connections[using])


class ThreadsConfig(AppConfig):
    name = "threads"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(
            lambda sender, using, **kwargs: _ensure_search_index(using),
            sender=self,
            weak=False,
            dispatch_uid="threads.search_index_ensure",
        )
        pre_migrate.connect(
            lambda sender, using, **kwargs: _drop_append_view(using),
            sender=self,
            weak=False,
            dispatch_uid="threads.append_view_drop",
        )
