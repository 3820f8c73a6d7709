"""System checks of the project as a whole.

``convmem.E001``: the database was made before the December 2026 app split. Its migration
history names migrations that no longer exist while the new ones share their names, so
``migrate`` would report nothing to do and leave the old tables in place; this check (run by
``migrate``, which checks the database it migrates) stops it and names the upgrade command.

``convmem.E002``: a model server's base URL holds credentials (``https://user:secret@host/v1``).
The HTTP clients turn them into ``Authorization: Basic …`` in place of the API key's bearer
token, so the key is silently not sent.
"""

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register
from django.db import connections

from convmem.upstream import has_credentials

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


# The settings naming a model server (the memo writer's, the one /respond calls), each with
# the setting that holds its key.
MODEL_BASE_URL_SETTINGS = {
    "CONVMEM_OPENAI_BASE_URL": "CONVMEM_OPENAI_API_KEY",
    "CONVMEM_CHAT_BASE_URL": "CONVMEM_CHAT_API_KEY",
}


@register()
def model_base_url_check(app_configs: Any = None, **kwargs: Any) -> list:
    return [
        Error(
            f"{name} holds credentials (user:password@): they would be sent as Basic "
            "authentication in place of the API key.",
            hint=f"Take them out of the URL and put the key in {key_setting}.",
            id="convmem.E002",
        )
        for name, key_setting in MODEL_BASE_URL_SETTINGS.items()
        if has_credentials(getattr(settings, name, "") or "")
    ]
