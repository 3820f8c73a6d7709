"""Writing several new rows in as few round trips as the database allows.

``rows_insert`` takes unsaved model instances (of any models, in order) and inserts them: on
PostgreSQL as one statement, each insert a data-modifying CTE (``WITH a AS (INSERT …), b AS
(INSERT …) SELECT …``), so a turn's record and its audit event cost one round trip; on other
databases one ``INSERT`` per group (SQLite runs in-process: a statement is a call, not a
round trip). Field defaults and ``auto_now_add`` are applied as ``Model.save`` would; the rows
of a group marked ``returning`` get their primary keys (in insert order, as ``bulk_create``
relies on).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Model


@dataclass(frozen=True)
class Insert:
    """Rows of one model to insert, and what to do when a unique constraint is hit: ``None``
    (an error, as usual) or the text after ``ON CONFLICT`` (e.g. ``"(tenant_id, sha256) DO
    NOTHING"``), which PostgreSQL and SQLite both understand."""

    rows: Sequence[Model]
    on_conflict: str | None = None
    returning: bool = False


def row_values(row: Model) -> dict[str, Any]:
    """The column values ``row`` would be inserted with (defaults and ``auto_now_add``
    applied, as ``Model.save`` would), by column name, ready to pass as query parameters."""
    fields = [f for f in row._meta.concrete_fields if not f.primary_key]
    return {f.column: f.get_db_prep_save(f.pre_save(row, add=True), connection) for f in fields}


def _insert_sql(insert: Insert) -> tuple[str, list[Any]]:
    model = type(insert.rows[0])
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    params: list[Any] = []
    values = []
    for row in insert.rows:
        values.append("(" + ", ".join(["%s"] * len(fields)) + ")")
        params += list(row_values(row).values())
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES {', '.join(values)}"
    )
    if insert.on_conflict:
        sql += f" ON CONFLICT {insert.on_conflict}"
    if insert.returning:
        sql += f" RETURNING {quote(meta.pk.column)}"
    return sql, params


def rows_insert(inserts: Sequence[Insert]) -> None:
    """Insert every group of ``inserts`` (empty groups are skipped), at most one of them
    ``returning``. Call inside the transaction the rows belong to."""
    inserts = [insert for insert in inserts if insert.rows]
    if sum(insert.returning for insert in inserts) > 1:
        raise ValueError("at most one group of rows_insert can return its keys")
    statements = [_insert_sql(insert) for insert in inserts]
    returning = next((i for i, insert in enumerate(inserts) if insert.returning), None)
    keys: list[Any] = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and statements:
            ctes = ", ".join(f"w{i} AS ({sql})" for i, (sql, _) in enumerate(statements))
            tail = "SELECT 1" if returning is None else f"SELECT * FROM w{returning}"
            cursor.execute(f"WITH {ctes} {tail}", [p for _, params in statements for p in params])
            keys = [row[0] for row in cursor.fetchall()] if returning is not None else []
        else:
            for i, (sql, params) in enumerate(statements):
                cursor.execute(sql, params)
                if i == returning:
                    keys = [row[0] for row in cursor.fetchall()]
    if returning is not None:
        for row, key in zip(inserts[returning].rows, keys, strict=True):
            row.pk = key
            row._state.adding = False
