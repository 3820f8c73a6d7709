"""The common append as one statement on SQLite: an insert into a view whose trigger does it.

SQLite has no data-modifying CTEs (PostgreSQL's one-statement append, ``threads.services``), but
a statement and the triggers it fires are atomic together. ``APPEND_VIEW`` is an empty view
with a column per inserted value (the message's, the audit event's, ``parent_public_id``); its
``INSTEAD OF INSERT`` trigger reads the parent (the active leaf, or the named node) of a thread
not deleted, inserts the node under it, moves the leaf and writes the audit event — or, when
the parent is unknown or opens or ends a tool group, inserts nothing (the caller then takes
the ordinary path, which raises the right error). SQLite runs one writer at a time, so the
leaf the trigger reads is the leaf it moves.

The view and trigger are built from the models' columns by ``append_view_ensure``, run after
every ``migrate`` (``threads.apps``), so they never lag a column added to ``Message`` or
``AuditEvent``; ``append_view_drop`` runs before it, because SQLite refuses to rebuild a table
(Django's way of altering one) while a view names it.
"""

from django.db.backends.base.base import BaseDatabaseWrapper

from auditlog.models import AuditEvent
from threads.models import Message, Thread

APPEND_VIEW = "threads_append"
_NOT_INSERTED = ("id", "parent_id", "depth")


def message_columns() -> list[str]:
    """The message columns the view takes (the trigger sets parent and depth)."""
    return [f.column for f in Message._meta.concrete_fields if f.column not in _NOT_INSERTED]


def event_columns() -> list[str]:
    """The audit event columns the view takes (the trigger writes ``details``)."""
    return [f.column for f in AuditEvent._meta.concrete_fields if f.column not in ("id", "details")]


def _schema(quote) -> list[str]:
    message, thread, event = (
        quote(Message._meta.db_table),
        quote(Thread._meta.db_table),
        quote(AuditEvent._meta.db_table),
    )
    m_cols, e_cols = message_columns(), event_columns()
    view_select = ", ".join(
        [
            *(f"m.{quote(c)} AS m_{c}" for c in m_cols),
            *(f"e.{quote(c)} AS e_{c}" for c in e_cols),
            "m.public_id AS parent_public_id",
        ]
    )
    inserted = f"(SELECT id FROM {message} WHERE public_id = NEW.m_public_id)"
    return [
        f"CREATE VIEW {APPEND_VIEW} AS SELECT {view_select} FROM {message} m, {event} e WHERE 0",
        f"""CREATE TRIGGER {APPEND_VIEW}_insert INSTEAD OF INSERT ON {APPEND_VIEW}
        BEGIN
            INSERT INTO {message} ({", ".join(quote(c) for c in m_cols)}, parent_id, depth)
            SELECT {", ".join(f"NEW.m_{c}" for c in m_cols)}, p.id, p.depth + 1
            FROM {thread} t JOIN {message} p ON p.id = CASE
                WHEN NEW.parent_public_id IS NULL THEN t.active_leaf_id
                ELSE (SELECT n.id FROM {message} n WHERE n.public_id = NEW.parent_public_id
                      AND n.thread_id = t.id AND n.role <> 'root')
            END
            WHERE t.id = NEW.m_thread_id AND t.deleted_at IS NULL
              AND p.tool_calls IS NULL AND p.role <> 'tool';
            UPDATE {thread} SET active_leaf_id = {inserted}, updated_at = NEW.m_created_at
            WHERE id = NEW.m_thread_id AND {inserted} IS NOT NULL;
            INSERT INTO {event} ({", ".join(quote(c) for c in e_cols)}, details)
            SELECT {", ".join(f"NEW.e_{c}" for c in e_cols)}, json_object('role', NEW.m_role)
            WHERE {inserted} IS NOT NULL;
        END""",
    ]


def append_view_drop(db: BaseDatabaseWrapper) -> None:
    """Drop the view (and with it its trigger) on a SQLite database; nothing elsewhere."""
    if db.vendor == "sqlite":
        with db.cursor() as cursor:
            cursor.execute(f"DROP VIEW IF EXISTS {APPEND_VIEW}")


def append_view_ensure(db: BaseDatabaseWrapper) -> None:
    """(Re)create the view and its trigger on a SQLite database; nothing elsewhere."""
    if db.vendor != "sqlite":
        return
    append_view_drop(db)
    with db.cursor() as cursor:
        for statement in _schema(db.ops.quote_name):
            cursor.execute(statement)
