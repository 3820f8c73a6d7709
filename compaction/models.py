"""Summaries (memos over explicit message ranges) and assembly records (what the model saw, as
ids, with the texts that were not messages)."""

from typing import Any

from django.db import models
from django.db.models import Q

from compaction import record_form
from convmem import crypto
from convmem.compact_json import CompactJSONEncoder, CompactJSONField
from convmem.ids import new_assembly_id, new_summary_id
from convmem.models import Tenant
from convmem.pricing import STORED_COST_DIGITS, STORED_COST_PLACES
from convmem.sealed_fields import SealedBinaryField, SealedJSONField, SealedRow, SealedTextField
from threads.erasure import ERASED


class Summary(SealedRow, models.Model):
    """A memo standing for the closed range ``first`` … ``last`` of one path; originals are kept.

    Memos are rolling state: a memo extends its ``base`` (the memo of ``first`` … the message
    before ``segment_first``) with one bounded segment of originals, ``segment_first`` … ``last``,
    whose public ids are ``covered_ids``. So a writer reads at most one memo and one segment,
    and each row stays small however long the conversation grows. A memo without a base reads
    its whole range (``segment_first`` = ``first``). ``goal`` is how far the chain should reach:
    once this memo is written, the next segment toward it is requested (see
    ``compaction.services``).

    A ``pending`` row is a request to write the memo and doubles as the outbox of its Celery
    task (``enqueued_at``; re-enqueued by ``dispatch_pending_memos`` if the task was lost).
    ``leased_until`` is the claim of the worker writing it, so two deliveries never both call
    the backend. ``token_count`` is the memo's cost in the model input: the rendered memo
    message (its header naming the range, then ``text``), without the per-message overhead.
    ``covered_ids`` are the public ids of the covered messages, in path order (filled when the
    memo is written; known up front for most requests).
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        READY = "ready"
        STALE = "stale"
        FAILED = "failed"

    public_id = models.CharField(max_length=40, unique=True, default=new_summary_id, editable=False)
    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="summaries")
    first = models.ForeignKey("threads.Message", on_delete=models.PROTECT, related_name="+")
    last = models.ForeignKey("threads.Message", on_delete=models.PROTECT, related_name="+")
    segment_first = models.ForeignKey("threads.Message", on_delete=models.PROTECT, related_name="+")
    goal = models.ForeignKey(
        "threads.Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    covered_ids = models.JSONField(default=list, blank=True, encoder=CompactJSONEncoder)
    # The last message of the active path the writer read ahead to (``ReadsAhead``): what
    # those messages correct is already let go, so the memo that folds them in does not apply
    # their corrections again (a correction whose line is gone would take another). Not
    # indexed: memos go only with their thread, and messages are never deleted alone.
    read_ahead_to = models.ForeignKey(
        "threads.Message",
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
        editable=False,
    )
    base = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="extensions"
    )
    chain_depth = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Sealed with the subject's data key when encryption is on (``convmem.sealed_fields``).
    text = SealedTextField(blank=True)
    token_count = models.PositiveIntegerField(default=0)
    max_tokens = models.PositiveIntegerField(default=512)
    backend = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=128, blank=True)
    prompt_version = models.CharField(max_length=64, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True)
    # What the scorer found: the fact lists quote the memo and its originals, so with encryption
    # on the whole value is sealed like ``text`` (one value: the counts are read with it).
    scores = SealedJSONField(default=dict, blank=True, encoder=CompactJSONEncoder)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(
        max_digits=STORED_COST_DIGITS,
        decimal_places=STORED_COST_PLACES,
        default=0,
        help_text="What the writer's tokens cost at the thread's prices when the memo was stored.",
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)
    failure_streak = models.PositiveSmallIntegerField(
        default=0, help_text="Failed memos of this thread in a row, this one included."
    )
    retry_at = models.DateTimeField(
        null=True, blank=True, help_text="A failed memo: when the curator may ask again."
    )
    enqueued_at = models.DateTimeField(null=True, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True)
    scores_due = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A ready memo whose scores are not stored yet: since when (the outbox of its "
        "scoring task, as a pending row is of its writing task).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["thread", "-id"]
        # The README's word for it: staff pages say "memo" throughout.
        verbose_name = "memo"
        verbose_name_plural = "memos"
        indexes = [
            models.Index(fields=["thread", "status", "last"], name="summary_thread_status_last"),
            models.Index(fields=["status", "enqueued_at"], name="summary_status_enqueued"),
            # The live memos ending on a message: a context read probes it once per path row. The
            # leading column and the predicate make it the only index that fits those probes,
            # so the plan does not hinge on statistics (a fresh table has none).
            models.Index(
                fields=["last"],
                condition=Q(status__in=["pending", "ready"]),
                name="summary_live_last",
            ),
            # The newest failed (or ready) memo of a thread: the curator's backoff check.
            models.Index(fields=["thread", "status", "-id"], name="summary_thread_status_id"),
            # The dispatcher's look for memos whose scoring task was lost: only those rows.
            models.Index(
                fields=["scores_due"],
                condition=Q(scores_due__isnull=False),
                name="summary_scores_due",
            ),
        ]
        constraints = [
            # One written memo per range and covered content: a task delivered twice (or two
            # workers racing) cannot leave two ready memos of the same thing.
            models.UniqueConstraint(
                fields=["thread", "first", "last", "fingerprint"],
                condition=Q(status="ready"),
                name="summary_range_fingerprint",
            ),
            # At most one live (pending or ready) memo per range: concurrent context requests
            # asking for the same memo insert one pending row; the others are refused.
            models.UniqueConstraint(
                fields=["thread", "first", "last"],
                condition=Q(status__in=["pending", "ready"]),
                name="summary_one_live_per_range",
            ),
        ]

    def __str__(self) -> str:
        return self.public_id

    SEALING_RELATED = ("thread",)
    # An erased memo keeps its marker in clear (erasure's queries compare it as stored).
    SEALABLE_ROWS = ~Q(text=ERASED)

    def sealing_key_id(self, renew: bool = False) -> str:
        return self.thread.data_key(renew=renew)


class AssemblyRecord(models.Model):
    """One assembled model input: the assembler version and the ordered ids that went in.

    The rendered input itself is not stored unless the thread's profile keeps rendered inputs
    (``ModelProfile.keep_rendered_inputs`` or ``CONVMEM_KEEP_RENDERED_INPUTS``, for
    debugging): then ``rendered_pieces`` lists the digests of its messages, each stored once
    per thread, compressed (``RenderedPiece``), and is purged after ``CONVMEM_SNAPSHOT_DAYS``
    (set to null, ``rendered_purged_at`` set). ``rendered_hash`` always stays, so a replay can
    be checked from the ids alone.
    """

    public_id = models.CharField(
        max_length=40, unique=True, default=new_assembly_id, editable=False
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    # Indexed by ``assembly_thread_idx`` (thread, -id), which serves every lookup by thread.
    thread = models.ForeignKey(
        "threads.Thread", on_delete=models.CASCADE, related_name="assemblies", db_index=False
    )
    # Not indexed: no query looks records up by leaf, and messages are never deleted (erasure
    # keeps the row), so the protecting foreign key is never checked against this column.
    leaf = models.ForeignKey(
        "threads.Message", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    assembler_version = models.CharField(max_length=32)
    # Stored in the short forms of ``compaction.record_form``; read them through the
    # ``*_shown`` methods.
    # Written once, read whole: compact text on both databases (``CompactJSONField``).
    items = CompactJSONField(default=list)
    tokens = CompactJSONField(default=dict)
    budget = CompactJSONField(default=dict)
    # A budget whose profile, encoding and policy are those of the thread's previous record
    # stores only its window and reserve, and names the record holding the rest (one whose
    # own budget is whole): almost every turn asks with the same profile, so the rest would be
    # the same bytes again. Read it through ``budget_whole()`` (or ``budget_joined``). Not
    # indexed: records go only with their thread, and the deferred foreign key refuses to
    # delete a referenced record alone.
    budget_from = models.ForeignKey(
        "self",
        on_delete=models.DO_NOTHING,
        null=True,
        blank=True,
        related_name="+",
        db_index=False,
        editable=False,
    )
    plan = CompactJSONField(
        default=dict,
        blank=True,
        help_text="What the curator decided besides the items shown: dropped and elided "
        "message ids, the range the memo stands for, the memo it asked for, the input format "
        "(entries at their defaults are not stored).",
    )
    rendered_hash = models.CharField(max_length=64)
    rendered_pieces = models.JSONField(
        null=True,
        blank=True,
        help_text="SHA-256 of each rendered message in order (RenderedPiece), when the input was "
        "kept for debugging; null when it was not kept or has been purged.",
    )
    rendered_purged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        # The README's words: one record per model input.
        verbose_name = "model input"
        verbose_name_plural = "model inputs"
        indexes = [
            models.Index(fields=["thread", "-id"], name="assembly_thread_idx"),
            # The snapshot purge scans only rows still holding a snapshot, oldest first.
            models.Index(
                fields=["created_at"],
                condition=Q(rendered_pieces__isnull=False),
                name="assembly_snapshot_kept_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.public_id

    def plan_shown(self) -> dict:
        """The whole plan, its covered range and prefix by key as stored; the admin and the
        export show those as public ids (``compaction.selectors.assembly_plan``)."""
        return record_form.plan_shown(self.plan)

    def budget_whole(self) -> dict:
        """The budget as written: its own window and reserve, and the rest from the record
        it names (``budget_from``)."""
        if self.budget_from_id is None:
            return self.budget
        return budget_joined(self.budget, self.budget_from.budget)

    def budget_shown(self) -> dict:
        return record_form.budget_shown(self.budget_whole(), self.assembler_version)

    def tokens_shown(self) -> dict:
        return record_form.tokens_shown(self.tokens, self.budget)


# What a record's budget always holds itself; the rest may be another record's.
BUDGET_OWN = ("window", "reserve")


def budget_joined(own: dict, referenced: dict | None) -> dict:
    """A budget stored short (``own``: window and reserve) with the rest from the budget of
    the record it names (``referenced``; None: ``own`` is whole), in the order written."""
    if referenced is None:
        return own
    return {**referenced, **own}


def budget_shortened(stored: dict, previous: dict | None) -> dict | None:
    """``stored`` as its window and reserve only, when everything else equals ``previous``
    (a whole stored budget of the same assembler version); None when it must stay whole."""
    if previous is None:
        return None
    rest = {key: value for key, value in stored.items() if key not in BUDGET_OWN}
    previous_rest = {key: value for key, value in previous.items() if key not in BUDGET_OWN}
    if rest != previous_rest or not set(BUDGET_OWN) <= stored.keys():
        return None
    return {key: stored[key] for key in BUDGET_OWN}


class ContentBlob(SealedRow, models.Model):
    """Text an assembly used that is not a message or summary (system prompts, retrieved items),
    stored once by SHA-256 so a replay can rebuild the input. Erasable like content.

    With encryption on, a blob is stored once per subject: ``key_id`` is the subject's data key,
    which seals ``text``, so destroying the key shreds the subject's blobs and no other
    subject's. With it off (``key_id`` ""), once per tenant, as blobs written before.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    key_id = models.CharField(max_length=40, blank=True, default="", db_default="", editable=False)
    sha256 = models.CharField(max_length=64)
    text = SealedTextField(blank=True)
    erased_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "stored prompt or retrieved text"
        verbose_name_plural = "stored prompts and retrieved texts"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "key_id", "sha256"], name="blob_tenant_key_sha256"
            ),
        ]

    def __str__(self) -> str:
        return self.sha256[:12]

    # No public id: (tenant, key, sha256) names the blob, and is unique.
    SEALED_IDENTITY = "sealed_identity"
    # Blobs stored in clear belong to the tenant (shared by its subjects), not to one subject:
    # there is no one key to seal them with. Erasure reaches them as before.
    SEALABLE_ROWS = Q(erased_at__isnull=True) & ~Q(key_id="")

    @property
    def sealed_identity(self) -> str:
        return blob_identity(self.tenant_id, self.key_id, self.sha256)

    def sealing_key_id(self, renew: bool = False) -> str:
        # The key is the blob's scope (part of its identity): a blob is never re-keyed.
        return self.key_id


def blob_identity(tenant_id: int, key_id: str, sha256: str) -> str:
    """A content blob's identity in its sealed text's associated data."""
    return f"{tenant_id}:{key_id}:{sha256}"


def blob_key_id(thread: Any) -> str:
    """The scope the thread's blobs are stored under: its subject's data key when encryption is
    on, "" (the tenant's) when off."""
    return thread.data_key() if crypto.encryption_enabled() else ""


class RenderedPiece(SealedRow, models.Model):
    """One rendered message of a kept model input (canonical JSON, zlib-compressed), stored once
    per thread by SHA-256: consecutive inputs share their common messages, so keeping inputs
    costs about one new message per turn, not the whole window again. Deleted with the last
    snapshot that names it (purge or erasure)."""

    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="+")
    sha256 = models.CharField(max_length=64)
    # The compressed bytes, sealed with the subject's data key when encryption is on
    # (``convmem.sealed_fields``): the thread is the subject's, so the per-thread dedup holds.
    data = SealedBinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "sha256"], name="piece_thread_sha256"),
        ]

    def __str__(self) -> str:
        return self.sha256[:12]

    # No public id: (thread, sha256) names the piece, and is unique.
    SEALED_IDENTITY = "sealed_identity"
    SEALING_RELATED = ("thread",)

    @property
    def sealed_identity(self) -> str:
        return piece_identity(self.thread_id, self.sha256)

    def sealing_key_id(self, renew: bool = False) -> str:
        return self.thread.data_key(renew=renew)


def piece_identity(thread_id: int, sha256: str) -> str:
    """A rendered piece's identity in its sealed data's associated data."""
    return f"{thread_id}:{sha256}"
