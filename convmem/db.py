"""Writing several new rows in as few round trips as the database allows.

``rows_insert`` takes unsaved model instances (of any models, in order) and inserts them: on
PostgreSQL as one statement, each insert a data-modifying CTE (``WITH a AS (INSERT …), b AS
(INSERT …) SELECT …``), so a turn's record and its audit event cost one round trip; on other
databases one ``INSERT`` per group (SQLite runs in-process: a statement is a call, not a
round trip). Field defaults and ``auto_now_add`` are applied as ``Model.save`` would; the rows
of a group marked ``returning`` get their primary keys (in insert order, as ``bulk_create``
relies on).

``by_key`` writes the join that looks a row up by its primary key from each row before it,
in a form whose plan does not depend on the table's statistics or size; ``walk_sql`` writes
the steps of a recursive walk up a tree (a thread's path) with it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connection, connections
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


def _insert_sql(
    insert: Insert, selected: dict[str, tuple[str, Sequence[Any]]] | None = None
) -> tuple[str, list[Any]]:
    model = type(insert.rows[0])
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    selected = selected or {}
    params: list[Any] = []
    values = []
    for row in insert.rows:
        placeholders = []
        for column, value in row_values(row).items():
            if column in selected:
                sql, column_params = selected[column]
                placeholders.append(f"({sql})")
                params += column_params
            else:
                placeholders.append("%s")
                params.append(value)
        values.append("(" + ", ".join(placeholders) + ")")
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES {', '.join(values)}"
    )
    if insert.on_conflict:
        sql += f" ON CONFLICT {insert.on_conflict}"
    if insert.returning:
        sql += f" RETURNING {quote(meta.pk.column)}"
    return sql, params


def row_insert_sql(
    row: Model, *, selected: dict[str, tuple[str, Sequence[Any]]]
) -> tuple[str, list[Any]]:
    """An ``INSERT`` of ``row`` returning its key, whose ``selected`` columns take the value of
    a sub-select (SQL, parameters) instead of the row's: a key of a row inserted earlier in the
    transaction, looked up by a value known before it was inserted (its public id)."""
    return _insert_sql(Insert(rows=[row], returning=True), selected)


def rows_insert(
    inserts: Sequence[Insert], *, then: tuple[str, Sequence[Any]] | None = None
) -> tuple[Any, ...] | None:
    """Insert every group of ``inserts`` (empty groups are skipped), at most one of them
    ``returning``. Call inside the transaction the rows belong to.

    ``then``: a statement (SQL, parameters) to run after the inserts, in the same round trip
    on PostgreSQL (pipelined: a statement of its own, which sees the rows inserted); its first
    row is returned (None without it, or if it returns no row)."""
    inserts = [insert for insert in inserts if insert.rows]
    if sum(insert.returning for insert in inserts) > 1:
        raise ValueError("at most one group of rows_insert can return its keys")
    statements = [_insert_sql(insert) for insert in inserts]
    returning = next((i for i, insert in enumerate(inserts) if insert.returning), None)
    keys: list[Any] = []
    then_row = None
    with connection.cursor() as cursor, connection.cursor() as after:
        if connection.vendor == "postgresql" and statements:
            ctes = ", ".join(f"w{i} AS ({sql})" for i, (sql, _) in enumerate(statements))
            tail = "SELECT 1" if returning is None else f"SELECT * FROM w{returning}"
            written = (cursor, f"WITH {ctes} {tail}", [p for _, ps in statements for p in ps])
            if then is None:
                cursor.execute(*written[1:])
            else:
                statements_pipelined([written, (after, *then)])
            keys = [row[0] for row in cursor.fetchall()] if returning is not None else []
        else:
            for i, (sql, params) in enumerate(statements):
                cursor.execute(sql, params)
                if i == returning:
                    keys = [row[0] for row in cursor.fetchall()]
            if then is not None:
                after.execute(*then)
        if then is not None:
            then_row = after.fetchone() if after.description else None
    if returning is not None:
        for row, key in zip(inserts[returning].rows, keys, strict=True):
            row.pk = key
            row._state.adding = False
    return then_row


def by_key(vendor: str, table: str, alias: str, key: str, *, left: bool = False) -> str:
    """SQL joining in, as ``alias``, the row of ``table`` whose ``id`` is ``key`` (a column of
    the rows before it; ``left``: a NULL key gives NULLs), for a database vendor.

    On PostgreSQL a LATERAL subquery behind ``OFFSET 0`` (which the planner may not flatten
    into a join) keeps each lookup a probe of the primary key, whatever the statistics say and
    however the table has grown since the plan was made. Our reads are prepared statements
    (``prepare_threshold``), and PostgreSQL keeps the generic plan it made on a statement's
    first runs until something invalidates it: made while the message table was small and
    had no statistics (a fresh database: ten pages assumed), a walk up a thread's path hashed
    a sequential scan of every message for each step, 6 ms a context at 800 messages and
    growing with the table. SQLite's planner loops over the rows before and looks each up.
    """
    if vendor != "postgresql":
        return f"\n    {'LEFT JOIN' if left else 'JOIN'} {table} {alias} ON {alias}.id = {key}"
    kind, on = ("LEFT JOIN", " ON true") if left else ("CROSS JOIN", "")
    lookup = f"SELECT * FROM {table} {alias}0 WHERE {alias}0.id = {key} OFFSET 0"
    return f"\n    {kind} LATERAL ({lookup}) {alias}{on}"


def walk_sql(
    template: str, *, table: str, walk: str, vendor: str | None = None, **more: str
) -> str:
    """A recursive walk up a tree of ``table`` rows (``template``, whose CTE is named ``walk``)
    for a database ``vendor`` (this connection's by default): each ``{step}`` joins in, as
    ``m``, the parent of a walked row, and ``{row}`` the walked row itself, both looked up by
    key (``by_key``); ``more`` fills the template's other fields."""
    vendor = vendor or connection.vendor
    return template.format(
        step=by_key(vendor, table, "m", f"{walk}.parent_id"),
        row=by_key(vendor, table, "m", f"{walk}.id"),
        **more,
    )


def statements_pipelined(statements: Sequence[tuple[Any, str, Sequence[Any]]]) -> None:
    """Run ``statements`` (each a cursor, an SQL string and its parameters), in order; each
    cursor is left on the rows of the last statement it ran. On PostgreSQL they go in one round
    trip, in psycopg's pipeline mode: the server binds each one's parameters, so the connection
    prepares a statement it has run often enough (``prepare_threshold``) and PostgreSQL stops
    planning it; a query string of several statements is planned every time. Each statement
    starts (and takes its snapshot) once the one before it is done. Outside a transaction they
    are one, committed together when the pipeline ends, and a statement that fails takes the
    ones before it with it."""
    if connection.vendor != "postgresql":
        for cursor, sql, params in statements:
            cursor.execute(sql, params)
        return
    # Raised when the pipeline syncs, outside the cursors' own wrapping: Django's errors.
    with connection.wrap_database_errors, statements[0][0].connection.pipeline():
        for cursor, sql, params in statements:
            cursor.execute(sql, params)


def row_insert_unflushed(row: Model) -> None:
    """Insert ``row`` in a transaction of its own (outside any), whose commit does not wait
    for the write-ahead log to reach the disk: on PostgreSQL ``synchronous_commit`` is off for
    that one transaction, in the same round trip; elsewhere a plain insert.

    Only for a row whose loss in a database crash is harmless because whatever depends on it
    commits after it, durably, and a durable commit flushes the log up to itself, this row
    included: an idempotency key's claim. A flush costs about as much as the insert, or several
    times more on a busy disk."""
    if connection.in_atomic_block:
        # The setting would be the enclosing transaction's, and its commit not durable.
        raise RuntimeError("row_insert_unflushed runs outside any transaction")
    if connection.vendor != "postgresql":
        row.save(force_insert=True)
        return
    sql, params = _insert_sql(Insert(rows=[row], returning=True))
    with connection.cursor() as setting, connection.cursor() as cursor:
        # One pipeline, one transaction: the setting is that transaction's.
        statements_pipelined(
            [
                (setting, "SELECT set_config('synchronous_commit', 'off', true)", []),
                (cursor, sql, params),
            ]
        )
        row.pk = cursor.fetchone()[0]
    row._state.adding = False
    row._state.db = connection.alias


def model_columns(model: type[Model], alias: str) -> str:
    """The columns of ``model``'s concrete fields, in field order, of the table as ``alias``:
    the select list of a written read that ``model_from_row`` turns back into an instance."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)


def model_from_row(model: type[Model], values: Sequence[Any]) -> Model:
    """``model`` from its concrete fields' column values (``model_columns``), converted as the
    ORM converts them (the backend's converters, then the field's), loaded as the ORM loads
    it (``from_db``: sealed fields opened). For the hottest reads, where compiling the ORM's
    query cost more than running it."""
    attnames, converters = _loader(model)
    converted = list(values)
    for index, column, convert in converters:
        converted[index] = convert(converted[index], column, connection)
    return model.from_db(connection.alias, attnames, converted)


# Per connection (the backend's converters are its bound methods) and model: the fields'
# attribute names and the converters of the columns that have any, found as the ORM finds them
# for each query. Looking them up again for every row cost half a millisecond before a
# worker's first token (six models, sixty columns, most of them with no converter).
_Loader = tuple[list[str], list[tuple[int, Any, Any]]]
_LOADERS: "WeakKeyDictionary[Any, dict[type[Model], _Loader]]" = WeakKeyDictionary()


def _loader(model: type[Model]) -> _Loader:
    by_model = _LOADERS.setdefault(connections[DEFAULT_DB_ALIAS], {})
    loader = by_model.get(model)
    if loader is None:
        fields = model._meta.concrete_fields
        converters = []
        for index, field in enumerate(fields):
            column = field.get_col(model._meta.db_table)
            for convert in [
                *connection.ops.get_db_converters(column),
                *column.get_db_converters(connection),
            ]:
                converters.append((index, column, convert))
        loader = by_model[model] = ([f.attname for f in fields], converters)
    return loader
