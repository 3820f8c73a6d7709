"""The state of one respond call: which turns it wrote and who is answering now."""

from django.db import models

from convmem.ids import new_run_id
from threads.models import IdempotencyRecord, Message, Thread


class RespondRun(models.Model):
    """One ``POST …/respond`` under one Idempotency-Key (see ``respond.services``).

    Created with the user turn, in the transaction ``run_idempotent`` completes the key in, so
    a key has at most one run and one user turn; deleted with the key's record when its TTL
    ends. ``attempt`` and ``leased_until`` are the claim on answering: the request holding the
    current attempt calls the model and renews the lease while it streams; an answer is stored
    only under the current attempt, so one key never stores two answers. Ids only, no content.

    A run generated in a worker (``in_worker``) is shown by the API (``public_id``, ``run_…``):
    its events go to a Redis stream (``respond.events``) numbered from 1, ``seq`` the last one
    recorded here; the worker needs to know who asked (``actor_*``, for the audit event of the
    answer) and what to ask the model (``max_tokens``, ``temperature``, ``prefix_messages``; the
    input itself is rebuilt from the assembly record's ids).
    """

    class Status(models.TextChoices):
        STREAMING = "streaming"
        COMPLETE = "complete"
        INTERRUPTED = "interrupted"
        FAILED = "failed"
        CANCELLED = "cancelled"

    public_id = models.CharField(max_length=40, unique=True, default=new_run_id, editable=False)

    idempotency = models.OneToOneField(
        IdempotencyRecord, on_delete=models.CASCADE, related_name="respond_run"
    )
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="+")
    user_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    assembly = models.ForeignKey(
        "compaction.AssemblyRecord", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    # The latest answer stored: an interrupted one until a retry completes it.
    assistant_message = models.ForeignKey(
        Message, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.STREAMING)
    attempt = models.PositiveIntegerField(default=1)
    leased_until = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    finish_reason = models.CharField(max_length=32, blank=True)
    in_worker = models.BooleanField(default=False)
    seq = models.PositiveIntegerField(default=0)
    # The attempt a worker has started: a redelivered task for it does nothing.
    started_attempt = models.PositiveIntegerField(default=0)
    actor_type = models.CharField(max_length=16, blank=True)
    actor_id = models.CharField(max_length=150, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    prefix_messages = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"respond run {self.pk} ({self.status})"
