"""Threads and their message trees.

A thread's messages form one tree under a hidden root node (role ``root``) created with the
thread, so a thread always has exactly one root even when its first message is edited. The
API never shows the root: a first message reports ``parent_id: null``.
"""

from django.db import models
from django.db.models import Q
from tree_queries.models import TreeNode

from convmem import crypto
from convmem.ids import new_message_id, new_thread_id
from convmem.models import Tenant
from convmem.pricing import STORED_COST_DIGITS, STORED_COST_PLACES
from convmem.sealed_fields import (
    BlindIndexField,
    SealedJSONField,
    SealedRow,
    SealedTextField,
    SealedToolCallsField,
    SealedValuesJSONField,
)


class Thread(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_thread_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="threads")
    user_ref = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    profile = models.ForeignKey(
        "convmem.ModelProfile",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="threads",
    )
    root = models.OneToOneField(
        "threads.Message", on_delete=models.PROTECT, null=True, related_name="+", editable=False
    )
    active_leaf = models.ForeignKey(
        "threads.Message", on_delete=models.PROTECT, null=True, related_name="+", editable=False
    )
    # The current version of the thread's system prompt (None: none was ever set).
    system_prompt = models.ForeignKey(
        "threads.SystemPrompt",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Set by a self-service DELETE: the content is erased (tombstones stay for the audit trail
    # and the proof), and the API answers 404 for the thread from then on.
    deleted_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when a whole-thread erasure (a deletion request or a DELETE) cleared the thread: staff
    # pages mark it, rather than show an untitled thread of "[erased]" messages as a live one.
    erased_at = models.DateTimeField(null=True, blank=True, editable=False)
    # When the thread is erased and deleted by the expiry task (``audit.expiry``), through the
    # same path as a deletion request; None: never. Set on create (or from the profile's
    # ``thread_ttl``) and by PATCH. A legal hold keeps an expired thread until it is released.
    expires_at = models.DateTimeField(null=True, blank=True)
    # The id of the subject's data key (``convmem.crypto``; the key itself lives in the keys
    # database): in hand with the thread, so sealing a message needs no look-up. "" until the
    # thread's first sealed write (threads made before encryption).
    data_key_id = models.CharField(
        max_length=40, blank=True, default="", db_default="", editable=False
    )
    # How many messages came to the thread while its newest memo was being written (set by the
    # memo writer, ``compaction.services``): the curator asks for the next memo that much earlier
    # (``lead_messages``), so a thread whose turns outrun the worker does not lose the middle.
    # In hand with the thread, so context assembly reads nothing more. 0 at a human pace.
    memo_lead_messages = models.PositiveSmallIntegerField(default=0, db_default=0, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The expiry task's scan: only live threads that have an expiry are in it.
            models.Index(
                fields=["expires_at"],
                condition=Q(expires_at__isnull=False, deleted_at__isnull=True),
                name="thread_expiry_due_idx",
            ),
            models.Index(
                fields=["tenant", "user_ref", "-created_at"], name="thread_tenant_user_idx"
            ),
            models.Index(fields=["tenant", "-created_at"], name="thread_tenant_created_idx"),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def subject(self) -> str:
        return crypto.subject_of(self.user_ref, self.public_id)

    def data_key(self, renew: bool = False) -> str:
        """The subject's data key id, fetched (and kept on the row) on first need, or again
        (``renew``) when the key the row names was destroyed."""
        if renew or not self.data_key_id:
            self.data_key_id = crypto.subject_key_id(tenant_id=self.tenant_id, subject=self.subject)
            Thread.objects.filter(pk=self.pk).update(data_key_id=self.data_key_id)
        return self.data_key_id


class SystemPrompt(SealedRow, models.Model):
    """One version of a thread's system prompt: what ``/context`` and ``/respond`` place first
    when the request gives none. Versions are kept (an assembly records the prompt it used by
    hash, so an older one stays explainable); text ``""`` is a version that clears it."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="system_prompts")
    version = models.PositiveIntegerField()
    # Sealed with the subject's data key when encryption is on (``convmem.sealed_fields``).
    text = SealedTextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["thread", "version"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "version"], name="system_prompt_version"),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id} v{self.version}"

    # A version has no public id of its own: (thread, version) names it, and is unique.
    SEALED_IDENTITY = "sealed_identity"
    SEALING_RELATED = ("thread",)

    @property
    def sealed_identity(self) -> str:
        return f"{self.thread_id}:v{self.version}"

    def sealing_key_id(self, renew: bool = False) -> str:
        return self.thread.data_key(renew=renew)


class Role(models.TextChoices):
    ROOT = "root", "root (hidden)"
    SYSTEM = "system", "system"
    # OpenAI's name for instructions from the app (newer models take them in place of system).
    DEVELOPER = "developer", "developer"
    USER = "user", "user"
    ASSISTANT = "assistant", "assistant"
    TOOL = "tool", "tool"


API_ROLES = [Role.SYSTEM, Role.DEVELOPER, Role.USER, Role.ASSISTANT, Role.TOOL]


class MessageStatus(models.TextChoices):
    """``interrupted``: an assistant turn the respond endpoint stored with only the part that was
    streamed before the client went away (or the model failed mid-answer)."""

    COMPLETE = "complete"
    INTERRUPTED = "interrupted"


class Message(SealedRow, TreeNode):
    """One node of a thread's tree. Content is never overwritten except by erasure.

    ``depth`` (root = 0) and ``token_count`` are computed once at write; nodes never move, so
    both stay true for the node's lifetime. ``token_count`` is what the message costs in the
    model input without the per-message framing: its text, its content parts and tool calls
    (see ``threads.content``).

    Agent turns follow the OpenAI Chat Completions shapes: ``content_parts`` keeps the parts a
    message was sent as (text, images and files by reference; ``content`` then holds the text
    parts), an assistant turn may carry ``tool_calls`` (and the ``model`` and ``usage`` the
    model reported), and a ``tool`` message answers one of them by ``tool_call_id``.
    """

    public_id = models.CharField(max_length=40, unique=True, default=new_message_id, editable=False)
    # Indexed by ``message_thread_id_idx`` (thread, id), which serves every lookup by thread:
    # a second index on the thread alone would be stored bytes for nothing.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    # Sealed with the subject's data key (``convmem.sealed_fields``) when encryption is on.
    content = SealedTextField(blank=True)
    content_parts = SealedJSONField(null=True, blank=True)
    tool_calls = SealedToolCallsField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=255, blank=True)
    metadata = SealedValuesJSONField(default=dict, blank=True)
    model = models.CharField(max_length=128, blank=True)
    usage = models.JSONField(null=True, blank=True)
    cost = models.DecimalField(
        max_digits=STORED_COST_DIGITS,
        decimal_places=STORED_COST_PLACES,
        null=True,
        blank=True,
        help_text="What ``usage`` cost at the thread's prices when the turn was stored (exact).",
    )
    status = models.CharField(
        max_length=16, choices=MessageStatus.choices, default=MessageStatus.COMPLETE
    )
    token_count = models.PositiveIntegerField(default=0)
    depth = models.PositiveIntegerField(default=0)
    # Indexed only where set (``message_edits_idx``): almost no message is an edit.
    edits = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="edited_by",
        db_index=False,
    )
    # The recorded model input (a compaction assembly) an assistant turn answers, by its public
    # id: assemblies live in compaction, above threads, and are kept as long as the thread.
    # NULL (not "") for "none", as the API's ``assembly_id`` says.
    assembly_public_id = models.CharField(max_length=40, null=True, blank=True)  # noqa: DJ001
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # With sealing on, what the full-text index holds instead of the words: keyed hashes of
    # them under the subject's key (``convmem.blind_index``); "" otherwise, and once erased.
    search_terms = BlindIndexField(blank=True, default="", db_default="", editable=False)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["thread", "id"], name="message_thread_id_idx"),
            # Context recall: is an old message the only one of its thread at its depth (then
            # it lies on every path through that depth)?
            models.Index(fields=["thread", "depth"], name="message_thread_depth_idx"),
            models.Index(
                fields=["edits"], condition=Q(edits__isnull=False), name="message_edits_idx"
            ),
            # Usage rollups read the turns of a period that carry usage, and only those.
            models.Index(
                fields=["created_at"],
                condition=Q(usage__isnull=False),
                name="message_usage_created_idx",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["thread"], condition=Q(parent__isnull=True), name="message_one_root"
            ),
            models.CheckConstraint(
                condition=(Q(role="root") & Q(parent__isnull=True))
                | (~Q(role="root") & Q(parent__isnull=False)),
                name="message_root_iff_no_parent",
            ),
            models.CheckConstraint(
                condition=Q(role="tool") | Q(tool_call_id=""),
                name="message_tool_call_id_on_tool",
            ),
            models.CheckConstraint(
                condition=Q(tool_calls__isnull=True) | Q(role="assistant"),
                name="message_tool_calls_on_assistant",
            ),
        ]

    def __str__(self) -> str:
        # Ids only: admin LogEntry.object_repr and logs must never carry message content.
        return self.public_id

    SEALING_RELATED = ("thread",)
    # An erased message keeps its markers in clear, as erasure wrote them.
    SEALABLE_ROWS = Q(erased_at__isnull=True)

    def sealing_key_id(self, renew: bool = False) -> str:
        return self.thread.data_key(renew=renew)

    def blind_index_text(self) -> str | None:
        """The text the index finds the message by: its content (for content parts, their
        text) and each tool call's name and arguments (as ``threads.search`` indexes them);
        None for the hidden root, which is never found (and seals nothing)."""
        if self.role == Role.ROOT:
            return None
        calls = self.tool_calls if isinstance(self.tool_calls, list) else []
        functions = [call.get("function") or {} for call in calls if isinstance(call, dict)]
        pieces = [
            str(value)
            for function in functions
            if isinstance(function, dict)
            for value in (function.get("name"), function.get("arguments"))
            if value
        ]
        return " ".join([self.content or "", *pieces])


class IdempotencyRecord(SealedRow, models.Model):
    """The first response to a request made with an ``Idempotency-Key``, per tenant.

    A row is inserted (and committed) when a request starts, marking the key in flight; the
    response is stored in the same transaction as the write it describes, and only by the
    request holding the current ``attempt`` (a takeover increments it). Rows older than
    ``CONVMEM_IDEMPOTENCY_TTL_HOURS`` are purged by a periodic task.
    """

    class Status(models.TextChoices):
        IN_FLIGHT = "in_flight"
        COMPLETED = "completed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IN_FLIGHT)
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    # Sealed (as one value) with the data key of the thread's subject when encryption is on: a
    # response carries the content it wrote or read. A response that concerns no thread (none
    # carries content) is stored as it is.
    response_body = SealedJSONField(null=True, blank=True)
    # The claim: 1 for the request that inserted the row, +1 per takeover of an abandoned one.
    attempt = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "key"], name="idempotency_tenant_key"),
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created_idx")]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.key}"

    # No public id: (tenant, key) names the record, and is unique.
    SEALED_IDENTITY = "sealed_identity"
    SEALING_RELATED = ("thread",)
    # The responses of erased threads hold the erased view, written in clear as erasure wrote
    # it (a subquery, not a join: the batch's row lock takes this table's rows only).
    SEALABLE_ROWS = ~Q(thread__in=Thread.objects.filter(erased_at__isnull=False))

    @property
    def sealed_identity(self) -> str:
        return f"{self.tenant_id}:{self.key}"

    def sealing_key_id(self, renew: bool = False) -> str:
        return self.thread.data_key(renew=renew) if self.thread_id else ""
