"""System checks of the project as a whole.

``convmem.E001``: the database was made before the December 2026 app split. Its migration
history names migrations that no longer exist while the new ones share their names, so
``migrate`` would report nothing to do and leave the old tables in place; this check (run by
``migrate``, which checks the database it migrates) stops it and names the upgrade command.
"""

from typing import Any

from django.core.checks import Error, Tags, register
from django.db import connections

# A table only the layout before the split has (the audit log lives in ``auditlog`` since).
PRE_SPLIT_TABLE = "audit_auditevent"
# The models the split moved: (old app, model, new app).
MOVED_MODELS = [
    ("audit", "auditevent", "auditlog"),
    ("audit", "assemblyrecord", "compaction"),
    ("audit", "contentblob", "compaction"),
    ("compaction", "modelprofile", "convmem"),
]


def is_pre_split(connection: Any) -> bool:
    return PRE_SPLIT_TABLE in connection.introspection.table_names()


@register(Tags.database)
def database_layout_check(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list:
    return [
        Error(
            f"The database {alias!r} was made before the December 2026 app split.",
            hint="Run `python manage.py upgrade_app_split` once (it keeps every row), then "
            "migrate.",
            id="convmem.E001",
        )
        for alias in databases or ()
        if is_pre_split(connections[alias])
    ]
