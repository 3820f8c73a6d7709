"""Writes to threads and message trees. Views, admin, tasks and commands all come here.

Locking: every write that moves a thread's active leaf first takes
``SELECT … FOR NO KEY UPDATE`` on the thread row. That serialises leaf moves per thread (the
leaf always ends on a node that exists, and the default parent is read under the lock), while
``NO KEY`` still lets other transactions insert messages whose foreign key points at the
thread. Erasure takes ``FOR UPDATE`` and a context assembly ``FOR KEY SHARE``, so the two
never overlap (see ``thread_lock_for_erasure``). Locks are taken in one order — thread row,
then message rows — and only one thread at a time, so appends to different threads never wait
on each other. On SQLite the lock is a no-op; ``transaction_mode=IMMEDIATE`` serialises
writers instead.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from django.db import connection, transaction
from django.utils import timezone
from rest_framework.exceptions import NotFound

from auditlog.events import Actor, audit_event_build, audit_event_record
from auditlog.models import AuditEvent
from convmem.crypto import encryption_enabled, subject_key_id
from convmem.db import by_key, row_values, statements_pipelined
from convmem.errors import InvalidRequest
from convmem.models import ModelProfile, Tenant
from convmem.pricing import usage_cost
from convmem.profiles import profile_setting
from threads import append_view, selectors
from threads import content as content_rules
from threads.content import Content
from threads.models import API_ROLES, Message, MessageStatus, Role, SystemPrompt, Thread


def thread_encoding(thread: Thread) -> str:
    return profile_setting(thread.profile, "encoding")


@dataclass(frozen=True)
class TurnBody:
    """A checked message body: content, the agent fields, and its token count."""

    content: Content
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str
    metadata: dict[str, Any]
    model: str
    usage: dict[str, int] | None
    token_count: int


def turn_body_check(
    *,
    thread: Thread,
    role: str,
    content: Any,
    tool_calls: Any = None,
    tool_call_id: Any = None,
    metadata: dict[str, Any] | None = None,
    model: str = "",
    usage: Any = None,
) -> TurnBody:
    """Check a message body against its role and price it (``InvalidRequest`` if it does not
    fit the role). Done before any lock is taken: nothing here reads the tree."""
    if role not in API_ROLES:
        raise InvalidRequest(f"role must be one of {', '.join(API_ROLES)}.", code="invalid_role")
    if tool_calls is not None and role != Role.ASSISTANT:
        raise InvalidRequest(
            "tool_calls are accepted on assistant messages only.", code="field_not_for_role"
        )
    if role == Role.TOOL and tool_call_id is None:
        raise InvalidRequest(
            "a tool message needs the tool_call_id of the call it answers.",
            code="tool_call_id_required",
        )
    if role != Role.TOOL and tool_call_id is not None:
        raise InvalidRequest(
            "tool_call_id is accepted on tool messages only.", code="field_not_for_role"
        )
    if (model or usage is not None) and role != Role.ASSISTANT:
        raise InvalidRequest(
            "model and usage are accepted on assistant messages only.", code="field_not_for_role"
        )
    calls = content_rules.normalise_tool_calls(tool_calls) if tool_calls is not None else None
    body = content_rules.normalise_content(content, role=role, allow_empty=calls is not None)
    call_id = "" if tool_call_id is None else content_rules.normalise_tool_call_id(tool_call_id)
    return TurnBody(
        content=body,
        tool_calls=calls,
        tool_call_id=call_id,
        metadata=metadata or {},
        model=model,
        usage=None if usage is None else content_rules.normalise_usage(usage),
        token_count=content_rules.message_token_count(
            content=body, tool_calls=calls, encoding=thread_encoding(thread)
        ),
    )


@transaction.atomic
def thread_create(
    *,
    tenant: Tenant,
    actor: Actor,
    user_ref: str,
    title: str = "",
    metadata: dict[str, Any] | None = None,
    profile: Any = None,
    system: str | None = None,
    expires_at: datetime | Literal["profile"] | None = "profile",
) -> Thread:
    """Create a thread and its hidden root node; the root is the first active leaf. ``system``,
    if given, is the thread's system prompt (version 1). ``expires_at``: when the thread is
    erased (``audit.expiry``); None never; by default the profile's ``thread_ttl`` from now."""
    if expires_at == "profile":
        expires_at = thread_expiry_from_profile(profile, timezone.now())
    thread = Thread(
        tenant=tenant,
        user_ref=user_ref,
        title=title,
        metadata=metadata or {},
        profile=profile,
        expires_at=expires_at,
    )
    if encryption_enabled():
        # The subject's key is fetched (or made) here, off the per-turn path, and kept on the row.
        thread.data_key_id = subject_key_id(tenant_id=tenant.pk, subject=thread.subject)
    thread.save(force_insert=True)
    root = Message.objects.create(thread=thread, role=Role.ROOT, depth=0, parent=None)
    thread.root = root
    thread.active_leaf = root
    fields = ["root", "active_leaf"]
    if system is not None:
        thread.system_prompt = _system_prompt_add(thread, system)
        fields.append("system_prompt")
    thread.save(update_fields=fields)
    audit_event_record(
        actor=actor,
        action="thread.created",
        tenant_id=tenant.pk,
        thread_public_id=thread.public_id,
        object_ids=[thread.public_id],
    )
    return thread


def thread_expiry_from_profile(profile: ModelProfile | None, now: datetime) -> datetime | None:
    """When a thread created ``now`` on ``profile`` expires by default: ``thread_ttl`` later
    (None: the profile sets no expiry, or there is no profile)."""
    ttl = profile.thread_ttl if profile is not None else None
    return now + ttl if ttl is not None else None


def _system_prompt_add(thread: Thread, text: str) -> SystemPrompt:
    """A new version of the thread's system prompt (the caller holds the thread row, or has
    just created it, so version numbers cannot collide)."""
    last = SystemPrompt.objects.filter(thread=thread).order_by("-version").first()
    return SystemPrompt.objects.create(
        thread=thread, version=last.version + 1 if last else 1, text=text
    )


def thread_lock_for_erasure(thread: Thread) -> None:
    """Inside a transaction: lock the thread row ``FOR UPDATE`` until commit. Erasure takes it
    so that no append, edit or context assembly of the thread runs halfway across it: appends
    and edits wait on it (``FOR NO KEY UPDATE`` conflicts), and so does a context assembly
    (``thread_hold_against_erasure``), which therefore either read the content before the
    erasure and committed its snapshot before the erasure could purge it, or reads it erased."""
    Thread.objects.select_for_update().filter(pk=thread.pk).values_list("pk", flat=True).get()


def thread_hold_against_erasure(thread: Thread) -> None:
    """Inside a transaction: hold the thread row ``FOR KEY SHARE`` until commit, so that an
    erasure of the thread (``thread_lock_for_erasure``) waits for this transaction, or this
    one for it. Appends and edits are not held up (``FOR NO KEY UPDATE`` does not conflict).
    On SQLite there are no row locks; its IMMEDIATE transactions serialise writers anyway.

    A thread deleted meanwhile is a 404 (``NotFound``), as in ``_lock_thread``: a request
    that waited behind a ``DELETE`` reads the row as that erasure committed it (a locking read
    sees the newest version) and must not write a snapshot onto the deleted thread.
    """
    with connection.cursor() as cursor:
        cursor.execute(*thread_hold_sql(thread))
        thread_hold_checked(cursor.fetchone())


def thread_hold_sql(thread: Thread) -> tuple[str, list[Any]]:
    """The statement of ``thread_hold_against_erasure``, for a caller that sends it ahead of
    the read it guards, in the same round trip, and then passes its row to
    ``thread_hold_checked`` before using anything read. The read must be a statement of its
    own, sent after it: its snapshot is then taken once the lock is held."""
    lock = " FOR KEY SHARE" if connection.vendor == "postgresql" else ""
    return f"SELECT deleted_at FROM {Thread._meta.db_table} WHERE id = %s{lock}", [thread.pk]


def thread_hold_checked(row: Sequence[Any] | None) -> None:
    """Raise ``NotFound`` unless ``row`` (the hold's) shows the thread there, not deleted."""
    if row is None or row[0] is not None:
        raise NotFound("Not found.")


def _lock_thread(thread: Thread) -> Thread:
    """Lock the thread row alone; ``active_leaf`` is then read by a statement of its own.

    No join in the locking statement: under READ COMMITTED, a lock that waited for a concurrent
    leaf move re-reads only the locked row, and a joined leaf would still come from the old
    snapshot, so the leaf that transaction just committed would be missing (NULL).

    A thread deleted meanwhile (self-service DELETE) is a 404: nothing is written into it.
    """
    locked = Thread.objects.select_for_update(no_key=True).get(pk=thread.pk)
    if locked.deleted_at is not None:
        raise NotFound("Not found.")
    if Thread.profile.is_cached(thread) and thread.profile_id == locked.profile_id:
        locked.profile = thread.profile  # read by the caller already; no second query
    return locked


def _node_of(thread: Thread, public_id: str, *, field: str) -> Message:
    node = selectors.visible_message(thread, public_id)
    if node is None:
        raise InvalidRequest(
            f"{field} {public_id!r} is not a message of this thread.", code="unknown_message"
        )
    return node


# Whether a public id names an assembly (a recorded model input) of a thread. Assemblies live
# in compaction, above threads, which registers the check when it loads
# (``CompactionConfig.ready``); without it no assistant turn can name an assembly. With it
# comes the check as SQL (a query of one row or none, given the public id and the thread's
# key), which the one-statement append asks inside its own statement, saving a round trip.
AssemblyCheck = Callable[[Thread, str], bool]


def _no_assemblies(thread: Thread, public_id: str) -> bool:
    return False


_assembly_check: AssemblyCheck = _no_assemblies
_assembly_exists_sql: str | None = None


def assembly_check_register(check: AssemblyCheck, *, exists_sql: str | None = None) -> None:
    global _assembly_check, _assembly_exists_sql
    _assembly_check, _assembly_exists_sql = check, exists_sql


def _assembly_checked_in_statement() -> bool:
    """Whether the one-statement append checks an assembly itself (PostgreSQL, with the SQL
    registered); when it finds none, it inserts nothing and the ordinary path raises."""
    return _assembly_exists_sql is not None and connection.vendor == "postgresql"


def _assembly_of(
    thread: Thread, public_id: str | None, role: str, *, check: bool = True
) -> str | None:
    if public_id is None:
        return None
    if role != Role.ASSISTANT:
        raise InvalidRequest("assembly_id is only accepted on assistant messages.", code="invalid")
    if check and not _assembly_check(thread, public_id):
        raise InvalidRequest(
            f"assembly_id {public_id!r} is not an assembly of this thread.", code="unknown_assembly"
        )
    return public_id


def _check_tool_sequence(*, parent: Message, role: str, tool_call_id: str) -> None:
    """Keep every path valid Chat Completions input: a tool message answers an unanswered call
    of the assistant turn its tool group starts with, and nothing else follows a turn whose
    calls are not all answered yet."""
    group = selectors.tool_group_ending_at(message=parent, max_calls=content_rules.MAX_TOOL_CALLS)
    if role == Role.TOOL:
        if group is None:
            raise InvalidRequest(
                "a tool message must follow the assistant turn whose tool call it answers "
                "(or that turn's other tool results).",
                code="tool_result_without_call",
            )
        if tool_call_id not in group.call_ids:
            raise InvalidRequest(
                f"tool_call_id {tool_call_id!r} is not a call of the assistant turn this tool "
                f"message follows (its calls: {', '.join(group.call_ids)}).",
                code="unknown_tool_call",
            )
        if tool_call_id in group.answered:
            raise InvalidRequest(
                f"tool call {tool_call_id!r} already has its result on this path.",
                code="tool_call_answered",
            )
    elif group is not None and group.missing:
        raise InvalidRequest(
            f"the assistant's tool calls {', '.join(group.missing)} have no result yet; append "
            "a tool message for each before the next turn.",
            code="tool_results_pending",
        )


def _new_node(
    *,
    thread: Thread,
    parent: Message | None,
    role: str,
    body: TurnBody,
    edits: Message | None = None,
    assembly: str | None = None,
    status: str = MessageStatus.COMPLETE,
) -> Message:
    """The node to insert, unsaved (``parent`` None: the caller's statement sets it)."""
    return Message(
        thread=thread,
        parent=parent,
        role=role,
        content=body.content.text,
        content_parts=body.content.parts,
        tool_calls=body.tool_calls,
        tool_call_id=body.tool_call_id,
        metadata=body.metadata,
        model=body.model,
        usage=body.usage,
        # The profile is read only for a turn that reports usage (most turns do not).
        cost=usage_cost(thread.profile, body.usage) if body.usage else None,
        token_count=body.token_count,
        depth=parent.depth + 1 if parent else 0,
        edits=edits,
        assembly_public_id=assembly,
        status=status,
    )


def _insert_node(
    *,
    thread: Thread,
    parent: Message,
    role: str,
    body: TurnBody,
    edits: Message | None = None,
    assembly: str | None = None,
    status: str = MessageStatus.COMPLETE,
) -> Message:
    message = _new_node(
        thread=thread,
        parent=parent,
        role=role,
        body=body,
        edits=edits,
        assembly=assembly,
        status=status,
    )
    message.save(force_insert=True)
    # The public ids the API shows, known here without another query.
    message.parent_public_id = None if parent.role == Role.ROOT else parent.public_id
    message.edits_public_id = edits.public_id if edits else None
    return message


def _record_appended(actor: Actor, thread: Thread, message: Message, **details: Any) -> None:
    audit_event_record(
        actor=actor,
        action="message.appended",
        tenant_id=thread.tenant_id,
        thread_public_id=thread.public_id,
        object_ids=[message.public_id],
        # The role only: the parent, the depth and the token count are the message row's
        # (kept, content aside, through erasure); an event per turn is stored bytes per turn.
        details={"role": message.role, **{k: v for k, v in details.items() if v is not None}},
    )


def _move_leaf(thread: Thread, leaf: Message) -> None:
    thread.active_leaf = leaf
    thread.save(update_fields=["active_leaf", "updated_at"])


# One round trip for the common append on PostgreSQL: lock the thread row (FOR NO KEY UPDATE, as
# ``_lock_thread``), then one statement reads the parent (the active leaf, or the named node),
# inserts the node under it, moves the leaf and writes the audit event. The lock is a statement
# of its own, sent in the same pipeline (``statements_pipelined``: one transaction, and each
# statement prepared once the connection has run it often enough): the second statement then
# starts from a snapshot taken once the lock is held. Locking inside the writing statement made
# it update the row version its older snapshot saw while other appends queued on that version's
# tuple lock, which PostgreSQL reported as deadlocks under concurrent appends to one thread. The
# statement inserts nothing — and the caller takes the ordinary path, which raises the right
# error — when the thread is deleted, the parent is unknown, the answer's assembly is not one of
# the thread's, or the parent opens or ends a tool group (those checks need a walk). Its plan is
# prepared, and kept: the parent is looked up by key (``by_key``), whatever the statistics were
# when the plan was made.
_APPEND_LOCK = "SELECT 1 FROM {thread} WHERE id = %s FOR NO KEY UPDATE"
_ONE_STATEMENT_APPEND = """
WITH t AS (
    SELECT id, active_leaf_id FROM {thread} WHERE id = %s AND deleted_at IS NULL{assembly}
), p AS (
    SELECT m.id, m.depth, m.public_id, m.role FROM t{parent}
    WHERE m.tool_calls IS NULL AND m.role <> 'tool'
), ins AS (
    INSERT INTO {message} ({message_columns}, parent_id, depth)
    SELECT {message_values}, p.id, p.depth + 1 FROM p
    RETURNING id
), upd AS (
    UPDATE {thread} SET active_leaf_id = ins.id, updated_at = %s FROM ins WHERE {thread}.id = %s
), ev AS (
    INSERT INTO {event} ({event_columns}, details)
    SELECT {event_values}, jsonb_build_object('role', %s::text) FROM p, ins
)
SELECT ins.id, p.id, p.public_id, p.role, p.depth FROM ins, p
"""


def _append_in_one_statement(
    *,
    thread: Thread,
    actor: Actor,
    role: str,
    body: TurnBody,
    parent_public_id: str | None,
    assembly: str | None,
) -> Message | None:
    """The append as one statement (see ``_ONE_STATEMENT_APPEND``); None if it inserted
    nothing. Atomic on its own, or part of the caller's transaction."""
    message = _new_node(thread=thread, parent=None, role=role, body=body, assembly=assembly)
    event = audit_event_build(
        actor=actor,
        action="message.appended",
        tenant_id=thread.tenant_id,
        thread_public_id=thread.public_id,
        object_ids=[message.public_id],
    )
    node = {k: v for k, v in row_values(message).items() if k not in ("parent_id", "depth")}
    audit = {k: v for k, v in row_values(event).items() if k != "details"}
    if connection.vendor == "sqlite":
        row = _append_through_view(node, audit, parent_public_id)
    else:
        row = _append_with_ctes(thread, node, audit, role, parent_public_id)
    if row is None:
        return None
    message.pk, message.parent_id, parent_public, parent_role, parent_depth = row
    message.depth = parent_depth + 1
    message._state.adding = False
    message.parent_public_id = None if parent_role == Role.ROOT else parent_public
    message.edits_public_id = None
    return message


def _append_with_ctes(
    thread: Thread,
    node: dict[str, Any],
    audit: dict[str, Any],
    role: str,
    parent_public_id: str | None,
) -> tuple[Any, ...] | None:
    """PostgreSQL: ``_ONE_STATEMENT_APPEND``."""
    quote = connection.ops.quote_name
    message = quote(Message._meta.db_table)
    if parent_public_id is None:
        parent, parent_params = by_key("postgresql", message, "m", "t.active_leaf_id"), []
    else:
        # By the public id's index alone (``+ 0``: the thread's would read all its messages).
        parent = (
            f"\n    CROSS JOIN LATERAL (SELECT * FROM {message} m0 WHERE m0.public_id = %s"
            " AND m0.thread_id + 0 = t.id AND m0.role <> 'root' OFFSET 0) m"
        )
        parent_params = [parent_public_id]
    assembly_check, assembly_params = "", []
    if node["assembly_public_id"] is not None and _assembly_exists_sql is not None:
        assembly_check = f" AND EXISTS ({_assembly_exists_sql})"
        assembly_params = [node["assembly_public_id"], thread.pk]
    sql = _ONE_STATEMENT_APPEND.format(
        assembly=assembly_check,
        thread=quote(Thread._meta.db_table),
        message=message,
        event=quote(AuditEvent._meta.db_table),
        parent=parent,
        message_columns=", ".join(quote(c) for c in node),
        message_values=", ".join(["%s"] * len(node)),
        event_columns=", ".join(quote(c) for c in audit),
        event_values=", ".join(["%s"] * len(audit)),
    )
    params = [
        thread.pk,
        *assembly_params,
        *parent_params,
        *node.values(),
        timezone.now(),
        thread.pk,
        *audit.values(),
        role,
    ]
    lock = _APPEND_LOCK.format(thread=quote(Thread._meta.db_table))
    with connection.cursor() as cursor:
        statements_pipelined([(cursor, lock, [thread.pk]), (cursor, sql, params)])
        row = cursor.fetchone()
    return row


def _append_through_view(
    node: dict[str, Any], audit: dict[str, Any], parent_public_id: str | None
) -> tuple[Any, ...] | None:
    """SQLite: an insert into ``threads.append_view.APPEND_VIEW`` (its trigger appends), then
    the node and its parent read back; None if the trigger inserted nothing."""
    values = [*node.values(), *audit.values(), parent_public_id]
    columns = [*(f"m_{c}" for c in node), *(f"e_{c}" for c in audit), "parent_public_id"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {append_view.APPEND_VIEW} ({', '.join(columns)}) "
            f"VALUES ({', '.join(['%s'] * len(columns))})",
            values,
        )
        cursor.execute(_READ_BACK, [node["public_id"]])
        return cursor.fetchone()


_READ_BACK = f"""
SELECT m.id, p.id, p.public_id, p.role, p.depth
FROM {Message._meta.db_table} m JOIN {Message._meta.db_table} p ON p.id = m.parent_id
WHERE m.public_id = %s
"""


def message_append(
    *,
    thread: Thread,
    actor: Actor,
    role: str,
    content: Any,
    parent_public_id: str | None = None,
    assembly_public_id: str | None = None,
    tool_calls: Any = None,
    tool_call_id: Any = None,
    metadata: dict[str, Any] | None = None,
    model: str = "",
    usage: Any = None,
) -> Message:
    """Append a node under ``parent_public_id`` (default: the active leaf) and make it the leaf.

    ``content`` is a string or a list of content parts; see ``turn_body_check`` and
    ``threads.content`` for the agent fields. Takes the thread row lock (see module
    docstring). Two appends to the same parent both survive as siblings; the leaf ends on
    whichever committed last.
    """
    body = turn_body_check(
        thread=thread,
        role=role,
        content=content,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id,
        metadata=metadata,
        model=model,
        usage=usage,
    )
    if role != Role.TOOL:
        # Checked before the statement, or by it: an assembly, once recorded, stays (with its
        # thread).
        assembly = _assembly_of(
            thread, assembly_public_id, role, check=not _assembly_checked_in_statement()
        )
        message = _append_in_one_statement(
            thread=thread,
            actor=actor,
            role=role,
            body=body,
            parent_public_id=parent_public_id,
            assembly=assembly,
        )
        if message is not None:
            return message
    with transaction.atomic():
        locked = _lock_thread(thread)
        if parent_public_id is None:
            parent = locked.active_leaf
        else:
            parent = _node_of(locked, parent_public_id, field="parent_id")
        _check_tool_sequence(parent=parent, role=role, tool_call_id=body.tool_call_id)
        assembly = _assembly_of(locked, assembly_public_id, role)
        message = _insert_node(
            thread=locked, parent=parent, role=role, body=body, assembly=assembly
        )
        _move_leaf(locked, message)
        _record_appended(actor, locked, message)
    return message


@dataclass(frozen=True)
class Turn:
    """One message of a batch append (the fields ``message_append`` takes besides the tree)."""

    role: str
    content: Any
    assembly_public_id: str | None = None
    tool_calls: Any = None
    tool_call_id: Any = None
    metadata: dict[str, Any] | None = None
    model: str = ""
    usage: Any = None


def messages_append_batch(
    *, thread: Thread, actor: Actor, turns: list[Turn], parent_public_id: str | None = None
) -> list[Message]:
    """Append ``turns`` as a chain (each the parent of the next) under ``parent_public_id``
    (default: the active leaf), all or nothing: an assistant turn with the results of its tool
    calls in one call. A turn that would be refused alone refuses the batch (``InvalidRequest``
    naming its index), and nothing is written."""
    messages: list[Message] = []
    with transaction.atomic():
        for index, turn in enumerate(turns):
            try:
                message = message_append(
                    thread=thread,
                    actor=actor,
                    role=turn.role,
                    content=turn.content,
                    parent_public_id=messages[-1].public_id if messages else parent_public_id,
                    assembly_public_id=turn.assembly_public_id,
                    tool_calls=turn.tool_calls,
                    tool_call_id=turn.tool_call_id,
                    metadata=turn.metadata,
                    model=turn.model,
                    usage=turn.usage,
                )
            except InvalidRequest as error:
                code = error.get_codes()
                raise InvalidRequest(f"messages[{index}]: {error.detail}", code=code) from None
            messages.append(message)
    return messages


def message_edit(
    *,
    thread: Thread,
    actor: Actor,
    message_public_id: str,
    content: Any,
    tool_calls: Any = None,
    metadata: dict[str, Any] | None = None,
) -> Message:
    """Make a sibling of the message with new content; it becomes the active leaf.

    The sibling keeps the original's role and ``tool_call_id``, and its ``tool_calls`` unless
    new ones are given. The edited node and its subtree stay as they were ("what did it say
    before the edit").
    """
    with transaction.atomic():
        locked = _lock_thread(thread)
        # Read under the lock: a redaction committed just before must not have its erased
        # tool-call arguments copied back into the sibling.
        original = _node_of(locked, message_public_id, field="message")
        body = turn_body_check(
            thread=locked,
            role=original.role,
            content=content,
            tool_calls=original.tool_calls if tool_calls is None else tool_calls,
            tool_call_id=original.tool_call_id or None,
            metadata=metadata,
        )
        parent = Message.objects.get(pk=original.parent_id)
        _check_tool_sequence(parent=parent, role=original.role, tool_call_id=body.tool_call_id)
        message = _insert_node(
            thread=locked, parent=parent, role=original.role, body=body, edits=original
        )
        _move_leaf(locked, message)
        audit_event_record(
            actor=actor,
            action="message.edited",
            tenant_id=thread.tenant_id,
            thread_public_id=locked.public_id,
            object_ids=[message.public_id, original.public_id],
            details={"edits_id": original.public_id, "tokens": body.token_count},
        )
    return message


def assistant_turn_record(
    *,
    thread: Thread,
    actor: Actor,
    parent: Message,
    content: str,
    model: str,
    usage: dict[str, Any],
    assembly_public_id: str,
    status: str = MessageStatus.COMPLETE,
    replaces: Message | None = None,
) -> Message:
    """Store an answer the respond endpoint got from the model: an assistant turn under the
    user turn it answers (``parent``), linked to the assembly it answered; it becomes the
    active leaf. ``status`` ``interrupted``: only the part streamed before the client went
    away. ``replaces``: the interrupted answer this one completes; the new turn is its sibling
    and names it in ``edits_id`` (the interrupted node stays, as any edited node).

    The caller has ``parent``, ``replaces`` and the assembly in hand (nodes of this thread,
    the assembly recorded for ``parent``), so none is read again. ``usage`` is stored as given
    (the model's report, or an estimate marked ``estimated``). Takes the thread row lock like
    every write here.
    """
    body = turn_body_check(thread=thread, role=Role.ASSISTANT, content=content, model=model)
    body = replace(body, usage=usage)
    with transaction.atomic():
        locked = _lock_thread(thread)
        message = _insert_node(
            thread=locked,
            parent=parent,
            role=Role.ASSISTANT,
            body=body,
            edits=replaces,
            assembly=assembly_public_id,
            status=status,
        )
        _move_leaf(locked, message)
        _record_appended(
            actor,
            locked,
            message,
            status=status,
            edits_id=message.edits_public_id,
            assembly_id=assembly_public_id,
        )
    return message


@dataclass(frozen=True)
class ImportedTurn:
    """One node of a conversation brought in from elsewhere, named by the source's own ids."""

    key: str
    parent_key: str | None  # None: a first turn of the conversation
    role: str
    content: Any
    tool_calls: Any = None
    tool_call_id: Any = None
    metadata: dict[str, Any] | None = None
    model: str = ""
    usage: Any = None
    edits_key: str | None = None
    status: str = MessageStatus.COMPLETE


@transaction.atomic
def thread_import(
    *,
    tenant: Tenant,
    actor: Actor,
    user_ref: str,
    turns: list[ImportedTurn],
    leaf_key: str | None,
    title: str = "",
    metadata: dict[str, Any] | None = None,
    profile: ModelProfile | None = None,
    system_prompts: list[str] | None = None,
) -> Thread:
    """A new thread holding a whole conversation tree, all or nothing: ``turns`` parents
    first, branches kept as branches (an ``edits_key`` keeps the edit's link), the active leaf
    on ``leaf_key`` (None: the root). Each turn is checked as an append would check it (body,
    tool sequence), and a refused one refuses the thread (``InvalidRequest`` naming its key).
    ``system_prompts``: the thread's system prompt versions, oldest first. One ``thread.created``
    and one ``thread.imported`` audit event, not one per message. Nobody else can see the
    thread before commit, so no row lock is taken."""
    prompts = system_prompts or []
    thread = thread_create(
        tenant=tenant,
        actor=actor,
        user_ref=user_ref,
        title=title,
        metadata=metadata,
        profile=profile,
        system=prompts[0] if prompts else None,
    )
    for text in prompts[1:]:
        thread.system_prompt = _system_prompt_add(thread, text)
    nodes: dict[str, Message] = {}
    for turn in turns:
        try:
            nodes[turn.key] = _import_turn(thread, turn, nodes)
        except InvalidRequest as error:
            raise InvalidRequest(
                f"message {turn.key}: {error.detail}", code=error.get_codes()
            ) from None
    thread.active_leaf = nodes.get(leaf_key or "", thread.root)
    thread.save(update_fields=["active_leaf", "system_prompt", "updated_at"])
    audit_event_record(
        actor=actor,
        action="thread.imported",
        tenant_id=tenant.pk,
        thread_public_id=thread.public_id,
        object_ids=[thread.public_id],
        details={"messages": len(nodes)},
    )
    return thread


def _import_turn(thread: Thread, turn: ImportedTurn, nodes: dict[str, Message]) -> Message:
    if turn.key in nodes:
        raise InvalidRequest("appears twice.", code="duplicate_message")
    if turn.parent_key is not None and turn.parent_key not in nodes:
        raise InvalidRequest(
            f"its parent {turn.parent_key} is not before it.", code="unknown_parent"
        )
    parent = nodes[turn.parent_key] if turn.parent_key is not None else thread.root
    body = turn_body_check(
        thread=thread,
        role=turn.role,
        content=turn.content,
        tool_calls=turn.tool_calls,
        tool_call_id=turn.tool_call_id,
        metadata=turn.metadata,
        model=turn.model,
        usage=turn.usage,
    )
    _check_tool_sequence(parent=parent, role=turn.role, tool_call_id=body.tool_call_id)
    edits = nodes.get(turn.edits_key) if turn.edits_key is not None else None
    if edits is not None and edits.parent_id != parent.pk:
        edits = None  # an edit is a sibling of what it edits; anything else is no edit
    return _insert_node(
        thread=thread, parent=parent, role=turn.role, body=body, edits=edits, status=turn.status
    )


def thread_update(
    *,
    thread: Thread,
    actor: Actor,
    active_leaf_public_id: str | None = None,
    switch_leaf: bool = False,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
    system: str | None = None,
    expires_at: datetime | Literal["unchanged"] | None = "unchanged",
) -> Thread:
    """Change title/metadata/system prompt/expiry and/or switch the active leaf to any node of
    the thread. A new ``system`` (``""`` clears it) is a new version; the older ones are kept.
    ``expires_at`` None removes the thread's expiry.

    A non-leaf node means "continue from here"; ``None`` means "start over from the root".
    """
    with transaction.atomic():
        locked = _lock_thread(thread)
        fields = ["updated_at"]
        if switch_leaf:
            leaf = (
                locked.root
                if active_leaf_public_id is None
                else _node_of(locked, active_leaf_public_id, field="active_leaf_id")
            )
            previous = locked.active_leaf
            locked.active_leaf = leaf
            fields.append("active_leaf")
            audit_event_record(
                actor=actor,
                action="thread.branch_switched",
                tenant_id=thread.tenant_id,
                thread_public_id=locked.public_id,
                object_ids=[leaf.public_id],
                details={"from": previous.public_id, "to": leaf.public_id},
            )
        if title is not None:
            locked.title = title
            fields.append("title")
        if metadata is not None:
            locked.metadata = metadata
            fields.append("metadata")
        if system is not None and system != (selectors.thread_system_text(locked) or ""):
            locked.system_prompt = _system_prompt_add(locked, system)
            fields.append("system_prompt")
        if expires_at != "unchanged":
            locked.expires_at = expires_at
            fields.append("expires_at")
        locked.save(update_fields=fields)
        if len(fields) > 1 and not switch_leaf:
            audit_event_record(
                actor=actor,
                action="thread.updated",
                tenant_id=thread.tenant_id,
                thread_public_id=locked.public_id,
                object_ids=[locked.public_id],
                details={"fields": fields[1:]},
            )
    return locked


def thread_memo_lead_record(*, thread_id: int, messages: int) -> None:
    """Keep how many messages came to the thread while its newest memo was written (the memo
    writer's measurement; see ``Thread.memo_lead_messages``). One statement, written only when
    it changed; not audited: it is the service's own pacing, not the conversation's state, and
    no person or key changes it."""
    Thread.objects.filter(pk=thread_id, deleted_at__isnull=True).exclude(
        memo_lead_messages=messages
    ).update(memo_lead_messages=messages)


def profile_for_new_thread(*, tenant: Tenant, name: str | None) -> ModelProfile | None:
    """The named profile of the tenant, else its default one (None: the built-in defaults)."""
    if name is None:
        return ModelProfile.objects.filter(tenant=tenant, is_default=True).first()
    profile = ModelProfile.objects.filter(tenant=tenant, name=name).first()
    if profile is None:
        raise InvalidRequest(f"Unknown model profile {name!r}.", code="unknown_profile")
    return profile
