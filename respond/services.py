"""One call per turn: append the user's turn, assemble its model input, ask the model, stream
the answer, store it. Behind ``POST /api/v1/threads/{id}/respond``.

Protocol, per (tenant, Idempotency-Key):

1. **The user turn** goes through ``threads.idempotency.run_idempotent``, as any append does:
   one transaction appends the user turn, assembles the model input for it
   (``context_assemble``: a budget that cannot fit it is a 400 and nothing is written) and
   creates the ``RespondRun`` holding the claim on answering (attempt 1, a lease). A retry
   replays this step, so a key never makes a second user turn.
2. **The answer** is asked of the model outside any transaction and streamed; the lease is
   renewed while chunks arrive. It is stored by ``_store``, which locks the run row and writes
   only if the run still names this request's attempt: a request whose claim was taken over
   stores nothing. A client that goes away (the generator is closed) leaves an assistant turn
   with status ``interrupted`` holding what was streamed; a model that fails mid-answer does
   the same.
3. **A retry** (same key, same body; ``stream`` may differ) finds the run:
   complete → the stored answer is replayed (read from the rows, so erased content shows
   erased); being answered under a live lease → 409, retry later; interrupted, failed, or its
   lease expired (the request answering it died) → the retry takes the claim (attempt + 1)
   and resumes: the input is assembled again for the same user turn, the model is asked
   again, and the answer is stored as a sibling of the interrupted one naming it in
   ``edits_id``. The path keeps one user turn and one answer.

Runs generated in a worker are taken over without a client too, by beat
(``orphans_take_over``, the last section), which keeps a dead worker's streamed text.

Locks: ``_answer_record`` takes the run row, then (``assistant_turn_record``) the thread row.
Nothing else locks run rows, so the order cannot deadlock with appends or erasure.
"""

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from time import monotonic
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from rest_framework.exceptions import APIException

from auditlog.events import Actor
from compaction.context import Ahead, Assembly, RetrievedItem, context_assemble
from compaction.models import AssemblyRecord
from compaction.replay import assembly_replay
from convmem.db import model_columns, model_from_row, row_insert_sql, statements_pipelined
from convmem.errors import (
    AnswerTooLong,
    ApiError,
    IdempotencyKeyInFlight,
    InvalidRequest,
    ModelRefused,
    ModelUnavailable,
    QueueUnavailable,
    RunCancelled,
    RunExpiredInQueue,
    RunFinished,
    RunLost,
    ThreadBusy,
)
from convmem.models import ModelProfile, Tenant
from convmem.profiles import profile_setting
from convmem.tokens import count_tokens
from respond import events as run_events
from respond.chat import ChatStream, ModelError, ModelParams, chat_model_for, chat_stream_open
from respond.events import RunEvent
from respond.models import RespondRun
from threads import services as thread_services
from threads.idempotency import run_idempotent
from threads.models import IdempotencyRecord, Message, MessageStatus, Role, Thread
from webhooks.services import webhook_event_emit

logger = logging.getLogger(__name__)
Status = RespondRun.Status


@dataclass(frozen=True)
class UserTurn:
    """The user's turn, as an append takes it."""

    content: Any
    metadata: dict[str, Any] | None = None
    parent_public_id: str | None = None


@dataclass(frozen=True)
class TurnContext:
    """How to assemble the input and what to ask the model for."""

    window_tokens: int | None = None
    reserve_tokens: int | None = None
    system: str | None = None
    retrieved: tuple[RetrievedItem, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None


# --- events, in the order a caller sees them ------------------------------------------------


@dataclass(frozen=True)
class Started:
    run: RespondRun
    replayed: bool
    resumed: bool


@dataclass(frozen=True)
class Token:
    text: str


@dataclass(frozen=True)
class Finished:
    run: RespondRun


@dataclass(frozen=True)
class Failed:
    """The answer could not be completed; ``error`` is what a JSON response would say."""

    run: RespondRun
    error: ApiError


Event = Started | Token | Finished | Failed


class _ClaimLost(Exception):
    """Another request took the answer over (this one outlived its lease)."""


class _Cancelled(Exception):
    """Thrown into a worker's answer when its run is cancelled (``run_cancel``)."""


class _AnswerTooLong(Exception):
    """The model's answer reached ``CONVMEM_MAX_CONTENT_CHARS``: it is cut there."""


def _lease_end() -> Any:
    return timezone.now() + timedelta(seconds=settings.CONVMEM_RESPOND_LEASE_SECONDS)


def _queued_lease_end() -> Any:
    """The lease of a run waiting in the broker's queue for a worker: it lasts
    ``CONVMEM_RESPOND_QUEUE_SECONDS``, not the lease of a generating worker, so a backlog does
    not make a queued run look abandoned; the worker that picks it up starts the generation's
    lease (``_claim``)."""
    return timezone.now() + timedelta(seconds=settings.CONVMEM_RESPOND_QUEUE_SECONDS)


def _lock_claim(run: RespondRun, attempt: int) -> RespondRun | None:
    """The run row, locked, if ``attempt`` still holds it; else None."""
    return (
        RespondRun.objects.select_for_update()
        .filter(pk=run.pk, attempt=attempt, status=Status.STREAMING)
        .first()
    )


def _release(run: RespondRun, attempt: int, *, code: str, status: str = Status.FAILED) -> None:
    """Give the claim up without an answer (a retry resumes)."""
    with transaction.atomic():
        released = RespondRun.objects.filter(
            pk=run.pk, attempt=attempt, status=Status.STREAMING
        ).update(status=status, leased_until=None, error_code=code, updated_at=timezone.now())
        if released:
            tenant_id = Thread.objects.filter(pk=run.thread_id).values_list("tenant_id", flat=True)
            _emit_outcome(run, tenant_id=tenant_id.first(), state=status, error=code, answer=None)


def _emit_outcome(
    run: RespondRun, *, tenant_id: int | None, state: str, error: str, answer: Message | None
) -> None:
    """``response.completed`` or ``response.failed`` for the tenant's webhooks (ids and states,
    never content), in the transaction that stores the outcome."""
    if tenant_id is None:
        return
    webhook_event_emit(
        tenant_id=tenant_id,
        event_type="response.completed" if state == Status.COMPLETE else "response.failed",
        data={
            "run_id": run.public_id,
            "thread_id": run.thread.public_id,
            "user_message_id": run.user_message.public_id,
            "assistant_message_id": answer.public_id if answer else None,
            "state": state,
            "error": error or None,
        },
    )


# ``_answer_running``'s read, written out: compiling the ORM's ``exists()`` cost twice as much
# as running it, before every first token.
_RUNNING_SQL = (
    "SELECT 1 FROM {run} WHERE thread_id = %s AND status = %s AND leased_until >= %s "
    "AND id <> %s LIMIT 1"
)


def _answer_running_sql(*, thread_id: int, other_than: int | None = None) -> tuple[str, list]:
    """``_answer_running``'s statement: a row when a run is being answered."""
    sql = _RUNNING_SQL.format(run=connection.ops.quote_name(RespondRun._meta.db_table))
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    # Primary keys start at 1: 0 excludes no run.
    return sql, [thread_id, Status.STREAMING.value, now, other_than or 0]


def _answer_running(*, thread_id: int, other_than: int | None = None) -> bool:
    """Whether a run on the thread is being answered (under a live lease). Callers hold the
    thread row lock, so two requests on one thread see each other's runs: the second waits
    for the first's transaction and then finds its run."""
    with connection.cursor() as cursor:
        cursor.execute(*_answer_running_sql(thread_id=thread_id, other_than=other_than))
        return cursor.fetchone() is not None


def _refused_if_busy(row: Sequence[Any] | None) -> None:
    """The check of ``_answer_running_sql``'s row, sent ahead of the context read."""
    if row is not None:
        raise ThreadBusy


def _take_over(run: RespondRun) -> int | None:
    """Claim a run nobody is answering; a conditional UPDATE picks one winner. Returns the new
    attempt, or None if a live request holds it (or it completed meanwhile). Raises
    ``ThreadBusy`` when another key's answer is running on the thread (one at a time).

    The new attempt's lease is a generating one's (``_lease_end``) even when a worker is to
    answer it: it becomes the queue's only once its task is sent (``respond_dispatch``). The
    claim commits before the send, so a process killed between the two leaves a run that is
    taken over again within a lease, not one that waits ``CONVMEM_RESPOND_QUEUE_SECONDS`` for
    a task nobody queued."""
    now = timezone.now()
    claimable = Q(status__in=[Status.INTERRUPTED, Status.FAILED]) | Q(
        status=Status.STREAMING, leased_until__lt=now
    )
    with transaction.atomic():
        # The thread row lock, as ``_begin`` holds it (through the append): a first attempt
        # under another key and this takeover cannot both start an answer on the thread.
        Thread.objects.select_for_update(no_key=True).filter(pk=run.thread_id).first()
        if _answer_running(thread_id=run.thread_id, other_than=run.pk):
            raise ThreadBusy
        taken = RespondRun.objects.filter(claimable, pk=run.pk, attempt=run.attempt).update(
            status=Status.STREAMING,
            attempt=F("attempt") + 1,
            leased_until=_lease_end(),
            error_code="",
            updated_at=now,
        )
    return run.attempt + 1 if taken == 1 else None


def _assemble(thread: Thread, actor: Actor, leaf: Message, context: TurnContext) -> Assembly:
    """The input ending at ``leaf`` (a user turn stored earlier: a retry's)."""
    return context_assemble(**_assemble_arguments(thread, actor, leaf, context))


def _assemble_arguments(
    thread: Thread, actor: Actor, leaf: Message, context: TurnContext
) -> dict[str, Any]:
    return {
        "thread": thread,
        "actor": actor,
        "window_tokens": context.window_tokens,
        "reserve_tokens": context.reserve_tokens,
        "system": context.system,
        "leaf_public_id": leaf.public_id,
        "retrieved": list(context.retrieved),
    }


def _run_insert_sql(run: RespondRun, assembly: AssemblyRecord) -> tuple[str, list[Any]]:
    """The run's ``INSERT`` (returning its key) for the round trip of its input's record,
    which it names by public id: the record's key is not known until that insert."""
    records = connection.ops.quote_name(AssemblyRecord._meta.db_table)
    run.prefix_messages = assembly.plan["prefix"]["messages"]
    return row_insert_sql(
        run,
        selected={
            "assembly_id": (f"SELECT id FROM {records} WHERE public_id = %s", [assembly.public_id])
        },
    )


def _model_params(
    thread: Thread, assembly: AssemblyRecord, context: TurnContext, prefix_messages: int
) -> ModelParams:
    """The answer is capped by the budget's output reserve (so it fits the window)."""
    reserve = assembly.tokens.get("reserve") or assembly.budget["reserve"]
    if reserve < 1:
        raise InvalidRequest(
            "reserve_tokens must leave room for the answer (at least 1).", code="budget_too_small"
        )
    if context.max_tokens is not None and context.max_tokens > reserve:
        raise InvalidRequest(
            f"max_tokens ({context.max_tokens}) exceeds the output reserve ({reserve}).",
            code="max_tokens_over_reserve",
        )
    breakpoints = profile_setting(thread.profile, "cache_breakpoints")
    return ModelParams(
        model=chat_model_for(thread),
        max_tokens=context.max_tokens or reserve,
        temperature=context.temperature,
        cache_key=thread.public_id,
        cache_breakpoint=prefix_messages - 1 if breakpoints and prefix_messages else None,
    )


def _begin(
    record: IdempotencyRecord,
    *,
    thread: Thread,
    actor: Actor,
    turn: UserTurn,
    context: TurnContext,
    assembled: list[Assembly],
    created: list[RespondRun],
) -> tuple[int, dict[str, Any], Thread]:
    """Step 1, inside ``run_idempotent``'s transaction: user turn, input, and the run under the
    key's ``record``. The assembly is handed back in ``assembled`` (its messages are the model
    input), the run in ``created``."""
    user = thread_services.message_append(
        thread=thread,
        actor=actor,
        role=Role.USER,
        content=turn.content,
        parent_public_id=turn.parent_public_id,
        metadata=turn.metadata,
    )
    run = RespondRun(
        idempotency=record,
        thread=thread,
        user_message=user,
        leased_until=_queued_lease_end() if settings.CONVMEM_RESPOND_IN_WORKER else _lease_end(),
        in_worker=settings.CONVMEM_RESPOND_IN_WORKER,
        actor_type=actor.type,
        actor_id=actor.id,
        max_tokens=context.max_tokens,
        temperature=context.temperature,
    )
    # The append holds the thread row lock until commit: checked under it (ahead of the
    # context read, in its round trip), a second request on the thread waits for this one's
    # run to be committed and then refuses (409). The run is inserted in the record's round
    # trip, pointing at it by its public id.
    assembly = context_assemble(
        **_assemble_arguments(thread, actor, user, context),
        appended_leaf=user,
        ahead=Ahead(*_answer_running_sql(thread_id=thread.pk), checked=_refused_if_busy),
        after_record=lambda assembly_record: _run_insert_sql(run, assembly_record),
    )
    _model_params(thread, assembly.record, context, assembly.prefix["messages"])
    assembled.append(assembly)
    (run.pk,) = assembly.after_record_row
    run._state.adding = False
    run.assembly = assembly.record
    run.assistant_message = None
    created.append(run)
    if run.in_worker:
        # Queued inside the transaction: a broker that refuses it rolls the turn back (503,
        # nothing written); a task that arrives before the commit waits for it
        # (``_request_commit_wait``; without the thread's id, ``respond_generate`` answers
        # ``RUN_NOT_VISIBLE`` and the task retries).
        _queue_generation(
            run, run.attempt, assembly, first=_turn_event(1, run, thread, resumed=False)
        )
    body = {
        "thread_id": thread.public_id,
        "user_message_id": user.public_id,
        "assembly_id": assembly.record.public_id,
    }
    return 201, body, thread


@dataclass
class Answering:
    """A claimed attempt and its model input (``assembly``, with the request's ``context``):
    the model is asked by ``respond_model_open`` (``stream``), or, for a replay of a stored
    answer, never (``assembly`` is None)."""

    run: RespondRun
    thread: Thread
    actor: Actor
    attempt: int = 0
    stream: ChatStream | None = None
    resumed: bool = False
    assembly: Assembly | None = None
    context: TurnContext | None = None
    # A retry of a key whose run a worker is generating: the request relays its events.
    attached: bool = False

    @property
    def replayed(self) -> bool:
        return self.assembly is None and not self.attached

    @property
    def in_worker(self) -> bool:
        return self.run.in_worker


def respond_start(
    *,
    thread: Thread,
    actor: Actor,
    key: str,
    fingerprint: str,
    turn: UserTurn,
    context: TurnContext,
) -> Answering:
    """Steps 1 and 3 of the protocol up to the assembled input, without asking the model yet;
    then iterate ``respond_events`` (which asks it after the ``Started`` event, so a client
    learns its turn and input as soon as they are stored), or call ``respond_model_open``
    first to have a model that cannot be asked raise before anything is answered. ``thread``
    comes with its profile (``thread_get``).

    Raises (nothing streamed yet): ``InvalidRequest`` and the other 4xx of an append and of
    ``context_assemble``; ``IdempotencyKeyInFlight`` while another request answers under the
    key; ``ThreadBusy`` while an answer under another key is running on the thread (nothing
    is written: one answer at a time, so the path stays user -> answer -> user -> answer).
    """
    assembled: list[Assembly] = []
    created: list[RespondRun] = []
    try:
        outcome = run_idempotent(
            tenant=thread.tenant,
            key=key,
            fingerprint=fingerprint,
            thread=thread,
            perform=lambda record: _begin(
                record,
                thread=thread,
                actor=actor,
                turn=turn,
                context=context,
                assembled=assembled,
                created=created,
            ),
        )
    except BaseException:
        _hand_overs_withdraw(created)
        raise
    if not outcome.replayed:
        # The run, its user turn and its input are in hand: nothing is read again.
        (run,) = created
        return Answering(
            run=run,
            thread=thread,
            actor=actor,
            attempt=run.attempt,
            assembly=assembled[0],
            context=context,
        )
    # A replay after ``_begin`` ran: its transaction rolled back (another request took the key).
    _hand_overs_withdraw(created)
    run = RespondRun.objects.select_related("user_message", "assembly", "assistant_message").get(
        idempotency__tenant_id=thread.tenant_id, idempotency__key=key
    )
    if run.status == Status.COMPLETE:
        return Answering(run=run, thread=thread, actor=actor)
    attempt = _take_over(run)
    if attempt is None:
        run.refresh_from_db()
        if run.status == Status.COMPLETE:
            return Answering(run=run, thread=thread, actor=actor)
        if run.in_worker and run.status == Status.STREAMING:
            # Generated by a worker, not by the request that asked: re-attach to it.
            return Answering(run=run, thread=thread, actor=actor, attached=True)
        raise IdempotencyKeyInFlight("This turn is being answered by another request; retry later.")
    try:
        assembly = _assemble(thread, actor, run.user_message, context)
    except BaseException:
        _release(run, attempt, code="assembly_failed")
        raise
    prefix_messages = assembly.prefix["messages"]
    RespondRun.objects.filter(pk=run.pk, attempt=attempt).update(
        assembly=assembly.record,
        prefix_messages=prefix_messages,
        in_worker=settings.CONVMEM_RESPOND_IN_WORKER,
    )
    run.assembly, run.prefix_messages = assembly.record, prefix_messages
    run.in_worker = settings.CONVMEM_RESPOND_IN_WORKER
    return Answering(
        run=run,
        thread=thread,
        actor=actor,
        attempt=attempt,
        resumed=True,
        assembly=assembly,
        context=context,
    )


def _hand_overs_withdraw(created: list[RespondRun]) -> None:
    """What the request handed a worker for a run that was rolled back (its input's text, its
    ``turn`` event) is deleted, not left in Redis for ``CONVMEM_RESPOND_QUEUE_SECONDS``; its
    task, if sent, finds no run."""
    for run in created:
        if run.in_worker:
            run_events.hand_over_withdraw(run.public_id)


def respond_model_open(answering: Answering) -> None:
    """Ask the model for the answer (up to its response headers), once; nothing to do for a
    replay. Raises ``ModelUnavailable`` / ``ModelRefused`` when the model cannot be asked
    (the claim is released; the user turn stays and a retry with the key resumes)."""
    if answering.replayed or answering.stream is not None:
        return
    run = answering.run
    assembly, context = answering.assembly, answering.context
    try:
        params = _model_params(
            answering.thread, assembly.record, context, assembly.prefix["messages"]
        )
        answering.stream = chat_stream_open(messages=assembly.messages, params=params)
    except ModelError as error:
        _release(run, answering.attempt, code="model_unavailable")
        raise _api_error(error) from error
    except BaseException:
        _release(run, answering.attempt, code="internal_error")
        raise


def _api_error(error: ModelError) -> ApiError:
    if error.retryable:
        return ModelUnavailable(f"{error.detail}. Retry with the same Idempotency-Key.")
    return ModelRefused(error.detail)


def respond_events(answering: Answering) -> Iterator[Event]:
    """The events of one answer: ``Started``, ``Token``s, then ``Finished`` or ``Failed``.

    Closing the generator early (the client went away) stores what was streamed as an
    ``interrupted`` assistant turn, if this request still holds the claim.
    """
    if answering.replayed:
        yield from _replay(answering.run)
        return
    yield from _Answer(answering).events()


def _replay(run: RespondRun) -> Iterator[Event]:
    yield Started(run=run, replayed=True, resumed=False)
    if run.assistant_message.content:
        yield Token(text=run.assistant_message.content)
    yield Finished(run=run)


class _Answer:
    """Streams one attempt and stores its outcome under the claim (see the module docstring)."""

    def __init__(self, answering: Answering) -> None:
        self.answering = answering
        self.run = answering.run
        self.stream: ChatStream | None = None
        self.parts: list[str] = []
        self.length = 0
        self.renew_every = settings.CONVMEM_RESPOND_LEASE_SECONDS / 3
        self.renew_at = monotonic() + self.renew_every
        # Set by the worker before it closes the answer: the run's content was erased meanwhile.
        self.erased = False

    def events(self) -> Iterator[Event]:
        # The turn and its input are stored: say so before waiting on the model.
        try:
            yield Started(run=self.run, replayed=False, resumed=self.answering.resumed)
        except GeneratorExit:
            # Closed before the model was asked: nothing to keep.
            self._closed()
            return
        try:
            respond_model_open(self.answering)
        except ApiError as error:
            yield Failed(run=self.run, error=error)
            return
        self.stream = self.answering.stream
        try:
            for text in self.stream:
                self._renew_lease()
                kept = self._keep(text)
                if kept:
                    yield Token(text=kept)
                if kept != text:
                    raise _AnswerTooLong
            if self.stream.finish_reason is None:
                raise ModelError("the model's stream ended before the answer", retryable=True)
            if not "".join(self.parts).strip():
                raise ModelError("the model answered with no text", retryable=True)
            self._store(MessageStatus.COMPLETE)
            yield Finished(run=self.run)
        except GeneratorExit:
            # No yield is allowed here.
            self._closed()
        except ModelError as error:
            self._store_interrupted(code="model_unavailable")
            yield Failed(run=self.run, error=_api_error(error))
        except _AnswerTooLong:
            self._store_interrupted(code=AnswerTooLong.default_code)
            yield Failed(run=self.run, error=AnswerTooLong())
        except _ClaimLost:
            yield Failed(run=self.run, error=IdempotencyKeyInFlight(_TAKEN_OVER))
        except _Cancelled:
            self._store_interrupted(code="cancelled", nothing=Status.CANCELLED)
            yield Failed(run=self.run, error=RunCancelled())
        except APIException as error:
            # Refused while storing: the thread was deleted meanwhile (404), say.
            _release(self.run, self.answering.attempt, code=str(error.get_codes()))
            yield Failed(run=self.run, error=error)
        except BaseException:
            _release(self.run, self.answering.attempt, code="internal_error")
            raise
        finally:
            self.stream.close()

    def _closed(self) -> None:
        """The answer was closed before its end: by a client that went away (what it was
        sent is kept, as an interrupted answer), or by the worker because the run's content
        was erased (``erased``: nothing is kept, the run ends ``cancelled``, ``erased``)."""
        if self.erased:
            _release(self.run, self.answering.attempt, code=RUN_ERASED, status=Status.CANCELLED)
        else:
            self._store_interrupted(code="client_disconnected")

    def _keep(self, text: str) -> str:
        """Add ``text`` to the answer up to ``CONVMEM_MAX_CONTENT_CHARS``; returns what was
        kept (less than ``text`` once the answer reaches the limit)."""
        room = settings.CONVMEM_MAX_CONTENT_CHARS - self.length
        kept = text[: max(room, 0)]
        if kept:
            self.parts.append(kept)
            self.length += len(kept)
        return kept

    def _renew_lease(self) -> None:
        if monotonic() < self.renew_at:
            return
        if not _lease_renew(self.run.pk, self.answering.attempt):
            raise _ClaimLost
        self.renew_at = monotonic() + self.renew_every

    def _store_interrupted(self, *, code: str, nothing: str = Status.FAILED) -> None:
        """Store what was streamed as an interrupted answer; with nothing streamed, end the
        claim with the state ``nothing``."""
        try:
            if "".join(self.parts).strip():
                self._store(MessageStatus.INTERRUPTED, code=code)
            else:
                # Nothing was streamed: there is no answer to keep.
                _release(self.run, self.answering.attempt, code=code, status=nothing)
        except _ClaimLost:
            pass
        except Exception:
            # Never let a failed write mask the disconnect; the lease runs out, a retry resumes.
            logger.exception("could not store the interrupted answer of run %s", self.run.pk)

    def _store(self, status: str, *, code: str = "") -> None:
        text = "".join(self.parts)
        _answer_record(
            self.answering,
            Outcome(
                text=text,
                status=status,
                code=code,
                model=self.stream.model,
                usage=self._usage(text),
                finish_reason=self.stream.finish_reason or "",
            ),
        )

    def _usage(self, text: str) -> dict[str, Any]:
        """The model's report, else an estimate (``_usage_estimate``)."""
        if self.stream.usage is None:
            return _usage_estimate(self.answering, text)
        usage = dict(self.stream.usage)
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return usage


@dataclass(frozen=True)
class Outcome:
    """An answer to store: its text (``status`` complete or interrupted, why in ``code``) and
    what the model said of it."""

    text: str
    status: str
    code: str
    model: str
    usage: dict[str, Any]
    finish_reason: str


def _usage_estimate(answering: Answering, text: str) -> dict[str, Any]:
    """An estimate in our encoding (marked ``estimated``): the recorded input's tokens, and
    the text received."""
    encoding = thread_services.thread_encoding(answering.thread)
    prompt = answering.run.assembly.tokens_shown().get("total", 0)
    completion = count_tokens(text, encoding)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "estimated": True,
    }


def _answer_record(answering: Answering, outcome: Outcome) -> None:
    """Store ``outcome`` as the run's answer, if ``answering``'s attempt still holds the claim
    (under the run row lock); else ``_ClaimLost``."""
    run = answering.run
    previous = run.assistant_message
    with transaction.atomic():
        if _lock_claim(run, answering.attempt) is None:
            raise _ClaimLost
        message = thread_services.assistant_turn_record(
            thread=answering.thread,
            actor=answering.actor,
            parent=run.user_message,
            content=outcome.text,
            model=outcome.model,
            usage=outcome.usage,
            assembly_public_id=run.assembly.public_id,
            status=outcome.status,
            replaces=previous,
        )
        complete = outcome.status == MessageStatus.COMPLETE
        run.status = Status.COMPLETE if complete else Status.INTERRUPTED
        run.assistant_message = message
        run.leased_until = None
        run.error_code = outcome.code
        run.finish_reason = outcome.finish_reason
        run.save(
            update_fields=[
                "status",
                "assistant_message",
                "leased_until",
                "error_code",
                "finish_reason",
                "updated_at",
            ]
        )
        _emit_outcome(
            run,
            tenant_id=answering.thread.tenant_id,
            state=run.status,
            error=outcome.code,
            answer=message,
        )


_TAKEN_OVER = "A retry took this answer over; read the turn from the thread or retry the key."


# --- runs generated in a worker (CONVMEM_RESPOND_IN_WORKER) -------------------------------------
#
# The request that asks (``respond_start``, then ``respond_dispatch``) stores the user turn, the
# input and the run, and queues ``respond.generate``; the worker (``respond_generate``) claims
# the attempt, asks the model and appends every event to the run's Redis stream
# (``respond.events``) before it stores the answer with ``_Answer`` as a request would. Requests
# only relay the stream, so a client that goes away costs nothing: the run goes on.

GENERATE_TASK = "respond.generate"
# The error of a run ended because its content was erased while it was generated.
RUN_ERASED = "erased"
# How often a worker looks for a cancel request, and records the sequence reached, while the
# model streams (seconds).
_POLL_SECONDS = 0.1
_SEQ_RECORD_SECONDS = 1.0
# The most input items handed to the worker with the task (about 60 bytes each); a larger
# input's runs are expanded from its record.
_HANDED_ITEMS_MAX = 2000


def _handed_items(assembly: Assembly | None) -> list[dict[str, Any]] | None:
    """The input's expanded items for the worker (ids, kinds and counts, never content: the
    broker holds no text), so it reads only the texts; None without an input in hand (a run
    beat takes over) or past ``_HANDED_ITEMS_MAX``: the worker expands the record's."""
    if assembly is None or not 0 < len(assembly.items) <= _HANDED_ITEMS_MAX:
        return None
    return assembly.items


def _queue_generation(
    run: RespondRun, attempt: int, assembly: Assembly | None, *, first: RunEvent | None = None
) -> None:
    """Send ``respond.generate`` for ``attempt``, with the input in hand handed over beside it
    (``run_events.input_hand_over``) and, for a first attempt, its ``turn`` event (``first``)
    appended to the run's stream in the same round trip, so the worker appends nothing before
    it asks the model; ``QueueUnavailable`` (503) when Redis or the broker refuses. The
    thread's id goes with it: see ``_request_commit_wait``."""
    from celery import current_app

    kwargs = {
        "items": _handed_items(assembly),
        "thread_id": run.thread_id,
    }
    try:
        if assembly is not None:
            run_events.input_hand_over(run.public_id, assembly.messages, first)
        current_app.send_task(
            GENERATE_TASK,
            args=[run.pk, attempt],
            kwargs=kwargs,
            # What monitoring shows of the task, given: Celery's own repr of the items took
            # longer than building and sending the rest of the message (before the commit).
            argsrepr=f"({run.pk}, {attempt})",
            kwargsrepr=_generation_kwargs_repr(kwargs),
        )
    except Exception as error:
        logger.warning("could not queue the generation of run %s: %r", run.pk, error)
        raise QueueUnavailable from error


def _generation_kwargs_repr(kwargs: dict[str, Any]) -> str:
    items = kwargs["items"]
    shown = "None" if items is None else f"<{len(items)} items>"
    return f"{{'thread_id': {kwargs['thread_id']}, 'items': {shown}}}"


def respond_first_turn(answering: Answering) -> RunEvent | None:
    """The ``turn`` event of a first attempt this request has just queued, as it appended it
    to the run's stream (sequence 1, ``_queue_generation``): a relay sends it at once, with
    the response's headers, rather than reading it back; it then relays after it. None for a
    re-attach, a takeover or a replay, whose relays read every event from the stream."""
    if answering.attached or answering.resumed or answering.replayed:
        return None
    return _turn_event(1, answering.run, answering.thread, resumed=False)


def respond_dispatch(answering: Answering) -> int:
    """Queue the generation of a resumed attempt (a first attempt was queued with its user
    turn, in ``_begin``). Returns the sequence number the attempt's events come after (0 for a
    first attempt): a relay of the resumed attempt starts there, not at an earlier attempt's
    tokens or its ``error`` event.

    Raises ``QueueUnavailable`` (503) when the broker cannot take it: the claim is released,
    the user turn stays (it was stored by the first attempt), and a retry with the key queues
    it again.
    """
    if not answering.resumed:
        return 0
    after = run_events.last_seq(answering.run.public_id)
    try:
        _queue_generation(answering.run, answering.attempt, answering.assembly)
    except QueueUnavailable:
        _release(answering.run, answering.attempt, code=QueueUnavailable.default_code)
        raise
    _queued_lease_hold(answering.run.pk, answering.attempt)
    return after


def _queued_lease_hold(run_pk: int, attempt: int) -> None:
    """The queue's lease for an attempt whose task is sent (see ``_take_over``), unless a
    worker has started it already: its generating lease is the worker's to renew."""
    RespondRun.objects.filter(
        pk=run_pk, attempt=attempt, status=Status.STREAMING, started_attempt__lt=attempt
    ).update(leased_until=_queued_lease_end())


def _claim(run_id: int, attempt: int) -> bool:
    """Claim ``attempt`` for this worker; False when another delivery of the task started it,
    the run moved on (safe to run twice), or it is not committed yet."""
    claimed = RespondRun.objects.filter(
        pk=run_id, attempt=attempt, status=Status.STREAMING, started_attempt__lt=attempt
    ).update(started_attempt=attempt, leased_until=_lease_end(), updated_at=timezone.now())
    return claimed == 1


# ``_claim`` behind the thread row lock, then the claimed run's read (``_worker_run_read``), in
# one pipeline (one transaction, one round trip): the lock waits for the request that queued a
# first attempt to commit (see ``_request_commit_wait``), for at most ``_COMMIT_WAIT_SECONDS``
# (``set_config`` local to that transaction), and the claim then sees its run. Pipelined, not a
# query string: the server binds each statement's parameters, so a worker's connection prepares
# the six-table read and PostgreSQL stops planning it before every first token. Each statement
# starts once the one before it is done, so the read's snapshot is taken after the wait. The
# commit does not wait for the log flush (before the first token): a database crash within the
# flush delay (a fraction of a second) loses the claim, and a takeover asks the model again, but
# this worker, its connection gone, stores nothing: never two answers. The read is only used
# when the claim returned its row.
_CLAIM_SETTINGS = (
    "SELECT set_config('lock_timeout', %s, true), set_config('synchronous_commit', 'off', true)"
)
_THREAD_LOCK = "SELECT 1 FROM {thread} WHERE id = %s FOR NO KEY UPDATE"
_RUN_CLAIM = (
    "UPDATE {run} SET started_attempt = %s, leased_until = %s, updated_at = %s "
    "WHERE id = %s AND attempt = %s AND status = %s AND started_attempt < %s RETURNING id"
)


def _claim_after_commit(run_id: int, attempt: int, thread_id: int) -> RespondRun | None:
    """PostgreSQL: ``_claim`` once the request that queued the task has committed, and the
    claimed run read, in one round trip, where claiming first (before that commit, as a task
    that arrives with the request still in its transaction nearly always does), waiting, and
    reading took seven. None when ``_claim`` would answer False, or when the wait ran out."""
    quote = connection.ops.quote_name
    claim_params = [
        attempt,
        _lease_end(),
        timezone.now(),
        run_id,
        attempt,
        Status.STREAMING.value,
        attempt,
    ]
    try:
        with (
            connection.cursor() as setting,
            connection.cursor() as lock,
            connection.cursor() as claim,
            connection.cursor() as read,
        ):
            statements_pipelined(
                [
                    (setting, _CLAIM_SETTINGS, [f"{_COMMIT_WAIT_SECONDS}s"]),
                    (lock, _THREAD_LOCK.format(thread=quote(Thread._meta.db_table)), [thread_id]),
                    (claim, _RUN_CLAIM.format(run=quote(RespondRun._meta.db_table)), claim_params),
                    (read, _WORKER_RUN_SQL, [run_id]),
                ]
            )
            claimed = claim.fetchone() is not None
            row = read.fetchone()
    except DatabaseError:
        logger.warning("no commit seen on thread %s within the wait", thread_id)
        return None
    return _run_from_row(row) if claimed and row is not None else None


def _worker_claim(run_id: int, attempt: int, thread_id: int | None) -> RespondRun | None:
    """Claim ``attempt`` (see ``respond_generate``): a first attempt, queued by a request
    inside its transaction (``thread_id`` given), once that request has committed. The claimed
    run, read as ``_worker_run_read`` reads it; None when this task may not generate it (yet)."""
    if thread_id is not None and connection.vendor == "postgresql":
        return _claim_after_commit(run_id, attempt, thread_id)
    if _claim(run_id, attempt) or (
        thread_id is not None and _request_commit_wait(thread_id) and _claim(run_id, attempt)
    ):
        return _worker_run_read(run_id)
    return None


def _worker_answering(
    run: RespondRun,
    attempt: int,
    items: list[dict[str, Any]] | None = None,
    rendered: list[dict[str, Any]] | None = None,
) -> Answering:
    """The claimed attempt with its input: the one the request ``rendered`` and handed over
    when its hash is the record's (nothing read); else rebuilt from the assembly record (with
    the ``items`` the request handed over, if they rebuild the recorded input; else as any
    replay does). The run's earlier answer is not joined: a first attempt has none (a key that is
    None reads nothing), and a resumed one reads it when it stores its own, after the stream;
    joining it made PostgreSQL plan a seven-table join before every first token (0.9 ms of
    planning against 0.4 for six)."""
    record = run.assembly
    replay = assembly_replay(assembly=record, items=items, rendered=rendered)
    if items is not None and not replay.matches:
        replay = assembly_replay(assembly=record)
    assembly = Assembly(
        record=record,
        messages=replay.messages,
        prefix={"messages": run.prefix_messages},
        sections={},
        tokens=record.tokens_shown(),
        memo_status="",
        pending_memo=None,
        memo_error=None,
        memo_lag={},
    )
    return Answering(
        run=run,
        thread=run.thread,
        actor=Actor(run.actor_type, run.actor_id),
        attempt=attempt,
        resumed=attempt > 1,
        assembly=assembly,
        context=TurnContext(max_tokens=run.max_tokens, temperature=run.temperature),
    )


# ``_worker_run_read``: the run with its thread (and the thread's profile and tenant), its user
# turn and its input's record, as the ORM's ``select_related`` joined them, written out.
_WORKER_RUN_SQL = (
    f"SELECT {model_columns(RespondRun, 'r')}, {model_columns(Thread, 't')}, "
    f"{model_columns(ModelProfile, 'p')}, {model_columns(Tenant, 'n')}, "
    f"{model_columns(Message, 'u')}, {model_columns(AssemblyRecord, 'a')} "
    f"FROM {RespondRun._meta.db_table} r "
    f"JOIN {Thread._meta.db_table} t ON t.id = r.thread_id "
    f"LEFT JOIN {ModelProfile._meta.db_table} p ON p.id = t.profile_id "
    f"JOIN {Tenant._meta.db_table} n ON n.id = t.tenant_id "
    f"JOIN {Message._meta.db_table} u ON u.id = r.user_message_id "
    f"LEFT JOIN {AssemblyRecord._meta.db_table} a ON a.id = r.assembly_id "
    "WHERE r.id = %s"
)


def _worker_run_read(run_id: int) -> RespondRun:
    """The run a worker generates, with what it needs joined in (one statement): compiling
    the ORM's six-table ``select_related`` cost more than running it, before the first
    token."""
    with connection.cursor() as cursor:
        cursor.execute(_WORKER_RUN_SQL, [run_id])
        row = cursor.fetchone()
    if row is None:
        raise RespondRun.DoesNotExist(f"No run {run_id}.")
    return _run_from_row(row)


def _run_from_row(row: Sequence[Any]) -> RespondRun:
    """The run of a ``_WORKER_RUN_SQL`` row, its joined rows attached."""
    models = (RespondRun, Thread, ModelProfile, Tenant, Message, AssemblyRecord)
    instances = []
    start = 0
    for model in models:
        values = row[start : start + len(model._meta.concrete_fields)]
        start += len(values)
        # A left join's NULLs (each model's primary key is its first column): no such row.
        instances.append(model_from_row(model, values) if values[0] is not None else None)
    run, thread, profile, tenant, user_message, assembly = instances
    thread.profile, thread.tenant = profile, tenant
    run.thread, run.user_message, run.assembly = thread, user_message, assembly
    return run


def _run_event(seq: int, event: Event, answering: Answering) -> RunEvent:
    """What the stream says of ``event``: ids and text, never the stored rows (``done`` is
    expanded by the relay, from the rows)."""
    run = answering.run
    if isinstance(event, Started):
        return _turn_event(seq, run, answering.thread, resumed=event.resumed)
    if isinstance(event, Token):
        return RunEvent(seq, "token", {"text": event.text})
    if isinstance(event, Finished):
        return RunEvent(seq, "done", {})
    error = event.error
    data = {
        "code": error.get_codes(),
        "detail": str(error.detail),
        "status": error.status_code,
        "thread_id": answering.thread.public_id,
        "user_message_id": run.user_message.public_id,
    }
    return RunEvent(seq, "error", data)


def _turn_event(seq: int, run: RespondRun, thread: Thread, *, resumed: bool) -> RunEvent:
    data = {
        "thread_id": thread.public_id,
        "run_id": run.public_id,
        "user_message_id": run.user_message.public_id,
        "assembly_id": run.assembly.public_id if run.assembly else None,
        "replayed": False,
        "resumed": resumed,
    }
    return RunEvent(seq, "turn", data)


RUN_NOT_VISIBLE = "run_not_visible"


def respond_generate(
    *,
    run_id: int,
    attempt: int,
    items: list[dict[str, Any]] | None = None,
    thread_id: int | None = None,
) -> str | None:
    """The worker's side of a run: claim ``attempt``, generate, append every event to the
    run's stream, store the answer (see the section comment). ``items``: the input's expanded
    items, handed over by the request (``_handed_items``); ``thread_id``: the run's thread
    (``_request_commit_wait``). Safe to run twice. Answers ``RUN_NOT_VISIBLE`` when the run
    is not committed (yet: the task was queued inside the request's transaction; or ever: that
    transaction rolled back)."""
    run = _worker_claim(run_id, attempt, thread_id)
    if run is None:
        # Not visible, or another delivery's. Claimed again once it is visible: a run
        # committed between the failed claim and this look would otherwise be taken for
        # another delivery's and never generated.
        if not RespondRun.objects.filter(pk=run_id).exists():
            return RUN_NOT_VISIBLE
        run = _worker_run_read(run_id) if _claim(run_id, attempt) else None
    if run is None:
        logger.info("run %s attempt %s is not this task's to generate", run_id, attempt)
        return None
    start = run_events.attempt_start(run.public_id, attempt)
    answering = _worker_answering(run, attempt, items, start.handed_input)
    if start.cancelled:
        _release(run, attempt, code="cancelled", status=Status.CANCELLED)
        event = _run_event(start.last_seq + 1, Failed(run=run, error=RunCancelled()), answering)
        run_events.event_append(run.public_id, event, attempt=attempt)
        return None
    seq = max(start.last_seq, run.seq)
    # A first attempt's ``turn`` event is on the stream already when its request appended it
    # (``_queue_generation``); one whose stream expired in the queue is appended again.
    turn_on_stream = attempt == 1 and start.last_seq >= 1
    generating = _Answer(answering)
    answer = generating.events()
    # The first record waits its turn too: a write before the model is asked would delay the
    # first token (the stream holds the sequence meanwhile).
    record_at = monotonic() + _SEQ_RECORD_SECONDS
    heartbeat = _LeaseHeartbeat(run.pk, attempt).start()
    try:
        for event in _events_until_cancelled(answer, run.public_id):
            if isinstance(event, Failed) and isinstance(event.error, IdempotencyKeyInFlight):
                # The claim was lost (taken over): the stream is the new attempt's to end.
                break
            if isinstance(event, Started) and turn_on_stream:
                continue
            seq += 1
            run_event = _run_event(seq, event, answering)
            # The last event's number is on the row before a relay can see that event.
            if run_event.terminal or monotonic() >= record_at:
                RespondRun.objects.filter(pk=run.pk, attempt=attempt).update(seq=seq)
                record_at = monotonic() + _SEQ_RECORD_SECONDS
            if not run_events.event_append(run.public_id, run_event, attempt=attempt):
                # Taken over (``orphans_take_over``), or erased: closing the answer stops the
                # model, and it stores nothing (its claim is gone; or it was told).
                generating.erased = run_events.stream_closed(run.public_id)
                logger.warning(
                    "run %s attempt %s was %s",
                    run.public_id,
                    attempt,
                    "erased" if generating.erased else "taken over",
                )
                seq -= 1
                break
    finally:
        try:
            answer.close()
        finally:
            heartbeat.stop()
        RespondRun.objects.filter(pk=run.pk, attempt=attempt).update(seq=seq)
    return None


def _lease_renew(run_pk: int, attempt: int) -> bool:
    """Push the lease of ``attempt`` on; False when it no longer holds the run (taken over,
    or its answer is stored)."""
    renewed = RespondRun.objects.filter(pk=run_pk, attempt=attempt, status=Status.STREAMING).update(
        leased_until=_lease_end()
    )
    return renewed == 1


class _LeaseHeartbeat:
    """Renews a generating worker's lease every third of ``CONVMEM_RESPOND_LEASE_SECONDS``
    from a thread of its own, whether or not the model sends anything: a model silent for
    longer than the lease (a slow first token, long thinking) must not make a live worker look
    dead to beat (``orphans_take_over``). The thread lives as long as the worker's process (a
    SIGKILL ends both, and the lease runs out); ``stop`` ends it on every way out of the
    generation. It stops by itself once the attempt no longer holds the run."""

    def __init__(self, run_pk: int, attempt: int) -> None:
        self.run_pk = run_pk
        self.attempt = attempt
        self.every = settings.CONVMEM_RESPOND_LEASE_SECONDS / 3
        self.stopping = threading.Event()
        self.thread = threading.Thread(
            target=self._beat, name=f"lease-heartbeat-{run_pk}", daemon=True
        )

    def start(self) -> "_LeaseHeartbeat":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()

    def _beat(self) -> None:
        try:
            while not self.stopping.wait(self.every):
                if not _lease_renew(self.run_pk, self.attempt):
                    return
        except Exception:
            # The lease then runs out as a dead worker's would: beat takes the run over.
            logger.exception("the lease heartbeat of run %s stopped", self.run_pk)
        finally:
            # The thread's own database connection.
            connection.close()


# How long a worker waits for the transaction of the request that queued its task.
_COMMIT_WAIT_SECONDS = 5


def _request_commit_wait(thread_id: int) -> bool:
    """Wait until the request that queued a first attempt has committed (or rolled back); True
    once it has, False if the wait was not possible. That request queues the task inside its
    transaction and holds the thread row lock (the append's) until it ends, so taking the same
    lock waits exactly that long: far sooner than a task retried 50 ms later, which a worker
    faster than the commit needed for most answers once it kept its database connection. Any
    other holder of the lock is as short (an append, an erasure's lock). (SQLite has no row
    locks: its ``IMMEDIATE`` transaction waits for the request's, the one writer. PostgreSQL
    waits and claims in one round trip: ``_claim_after_commit``.)"""
    try:
        with transaction.atomic():
            Thread.objects.select_for_update(no_key=True).filter(pk=thread_id).values_list(
                "pk", flat=True
            ).first()
    except DatabaseError:
        logger.warning("no commit seen on thread %s within the wait", thread_id)
        return False
    return True


def _events_until_cancelled(answer: Iterator[Event], run_public_id: str) -> Iterator[Event]:
    """``answer``'s events; a cancel request (looked for at most every ``_POLL_SECONDS``) is
    thrown into it, which stops the model and stores the partial answer as interrupted."""
    poll_at = monotonic() + _POLL_SECONDS
    for event in answer:
        yield event
        if isinstance(event, Token) and monotonic() >= poll_at:
            poll_at = monotonic() + _POLL_SECONDS
            if run_events.cancel_requested(run_public_id):
                yield from _after_cancel(answer)
                return


def _after_cancel(answer: Iterator[Event]) -> Iterator[Event]:
    try:
        yield answer.throw(_Cancelled())
    except StopIteration:
        return
    yield from answer


def run_cancel(*, run: RespondRun) -> None:
    """Ask the worker generating ``run`` to stop: it stores what was generated as an
    ``interrupted`` answer (or ends the run ``cancelled`` when nothing was). Raises
    ``RunFinished`` (409) for a run that is not being generated."""
    if run.status != Status.STREAMING:
        raise RunFinished
    run_events.cancel_request(run.public_id)


# --- runs whose worker died (beat: respond.take_over_orphaned_runs) ------------------------------
#
# A worker SIGKILLed mid-answer stops renewing its lease. Every
# ``CONVMEM_RESPOND_TAKEOVER_SECONDS`` beat looks for runs generated in a worker whose lease has
# run out and takes each over as a retry of its key would (``_take_over``: attempt + 1 under
# the thread and run row locks, so the old worker, if it was only late, can store nothing),
# then raises the stream's fence (so it can append nothing either) and looks at what the dead
# attempt streamed:
#
# - some text: it is stored as the run's ``interrupted`` answer (error ``worker_lost``) and the
#   stream ends with an ``error`` event ``run_lost``. The model is not asked again: a new
#   attempt would answer from the start, so a client that has shown the partial would see
#   text twice or two different answers glued together, and the tokens would be paid twice.
#   The client decides: the partial stays on the path as any interrupted answer, and a retry
#   of the key answers again (stored as its sibling, naming it in ``edits_id``).
# - no text (it died before the first token): nothing was seen, so the new attempt is queued
#   and generates the answer; its events continue the same sequence (a second ``turn`` event,
#   ``resumed: true``, then the tokens). After ``CONVMEM_RESPOND_MAX_ATTEMPTS`` attempts the run
#   is marked ``failed`` (``worker_lost``) instead.
#
# Either way the run ends complete, interrupted with its partial, or failed: never two answers.
# A run whose content was erased since (its stream closed) is ended ``cancelled`` (``erased``):
# nothing kept, nothing generated.
#
# A live worker is never taken for a dead one: it renews its lease from a heartbeat thread
# (``_LeaseHeartbeat``), not only when chunks arrive. A run still in the broker's queue has
# the queue's lease (``CONVMEM_RESPOND_QUEUE_SECONDS``) and its own rule: past it, it is ended
# ``failed`` (``_queued_runs_expire``), never generated twice. Within that lease, a run no worker
# has started ``CONVMEM_RESPOND_RESEND_SECONDS`` after its task was sent has the task sent again
# (``_lost_tasks_resend``), in case the broker lost it.

WORKER_LOST = "worker_lost"
_TAKEOVER_BATCH = 100


def orphans_take_over() -> int:
    """Take over every run whose worker stopped renewing its lease (see the section comment);
    returns how many were taken. A run whose takeover fails (Redis down) is left streaming
    under the new attempt's lease and taken again by a later pass."""
    # Only runs a worker started: a queued run's task is still in the broker (which hands it
    # out again if the worker that took it died), and a long queue must not use its attempts up.
    orphans = RespondRun.objects.filter(
        in_worker=True,
        status=Status.STREAMING,
        leased_until__lt=timezone.now(),
        started_attempt__gte=F("attempt"),
    ).order_by("leased_until")
    taken = 0
    for run in orphans.select_related(
        "thread__profile", "user_message", "assembly", "assistant_message"
    )[:_TAKEOVER_BATCH]:
        try:
            taken += _orphan_take_over(run)
        except Exception:
            logger.exception("could not take over run %s", run.public_id)
    _lost_tasks_resend()
    return taken + _queued_runs_expire()


def _lost_tasks_resend() -> None:
    """Send the task of each queued attempt no worker has started since
    ``CONVMEM_RESPOND_RESEND_SECONDS`` after it was sent, then after twice as long, and so
    on, within its queued lease (at most ``_TAKEOVER_BATCH`` a pass).

    kombu's Redis transport takes a message off the queue (``BRPOP``) and records it as
    unacknowledged in a second step: a consumer SIGKILLed between the two loses it, and the
    run would wait out its queued lease (seen in ``bench/respond_faults.py``). The task is safe
    to deliver twice (the claim), so a copy behind a slow queue costs its worker a few queries. The
    doubling keeps a queue that is only long from filling with copies: a few per run at most.
    """
    now = timezone.now()
    queued = (
        RespondRun.objects.filter(
            in_worker=True,
            status=Status.STREAMING,
            started_attempt__lt=F("attempt"),
            leased_until__gte=now,
            updated_at__lte=now - timedelta(seconds=settings.CONVMEM_RESPOND_RESEND_SECONDS),
        )
        .only("public_id", "thread_id", "attempt", "leased_until", "updated_at")
        .order_by("updated_at")
    )
    sent = 0
    for run in queued.iterator():
        if sent == _TAKEOVER_BATCH:
            break
        if _resend_due(run, now) and _task_resend(run, now):
            sent += 1


def _resend_due(run: RespondRun, now: Any) -> bool:
    """True once the attempt has waited since its last send (``updated_at``) at least as long
    as it had waited before it (since its queued lease began)."""
    queued_since = run.leased_until - timedelta(seconds=settings.CONVMEM_RESPOND_QUEUE_SECONDS)
    return now - run.updated_at >= run.updated_at - queued_since


def _task_resend(run: RespondRun, now: Any) -> bool:
    """Send the attempt's task again, once: the send is marked first, conditional on the row
    as this pass read it, so two passes cannot both send."""
    marked = RespondRun.objects.filter(
        pk=run.pk,
        attempt=run.attempt,
        status=Status.STREAMING,
        started_attempt__lt=run.attempt,
        updated_at=run.updated_at,
    ).update(updated_at=now)
    if not marked:
        return False
    try:
        _queue_generation(run, run.attempt, None)
    except QueueUnavailable:
        return False
    logger.warning(
        "run %s attempt %s: no worker started it, task sent again", run.public_id, run.attempt
    )
    return True


def _queued_runs_expire() -> int:
    """End ``failed`` (``run_expired_in_queue``) every run no worker started within its
    queued lease (``CONVMEM_RESPOND_QUEUE_SECONDS``): its task was lost, or the queue is that
    far behind; or within a lease of its takeover, when the process that took it over died
    before it sent the task (``_take_over``). It is not queued again (at the back of a long
    queue it would wait as long again); its stream ends with the error, ``response.failed``
    is sent, the thread is free, and a retry of the key queues a new attempt. Its task, if it
    arrives later, finds the run ended and does nothing. Returns how many were ended."""
    expired = RespondRun.objects.filter(
        in_worker=True,
        status=Status.STREAMING,
        leased_until__lt=timezone.now(),
        started_attempt__lt=F("attempt"),
    ).select_related("thread", "user_message", "assembly")
    ended = 0
    for run in expired[:_TAKEOVER_BATCH]:
        try:
            ended += _queued_run_expire(run)
        except Exception:
            logger.exception("could not end run %s, expired in the queue", run.public_id)
    return ended


def _queued_run_expire(run: RespondRun) -> bool:
    code = RunExpiredInQueue.default_code
    with transaction.atomic():
        # Conditional on no worker having started it: a worker that claims it first keeps it.
        expired = RespondRun.objects.filter(
            pk=run.pk,
            attempt=run.attempt,
            status=Status.STREAMING,
            started_attempt__lt=run.attempt,
            leased_until__lt=timezone.now(),
        ).update(
            status=Status.FAILED, leased_until=None, error_code=code, updated_at=timezone.now()
        )
        if not expired:
            return False
        _emit_outcome(
            run, tenant_id=run.thread.tenant_id, state=Status.FAILED, error=code, answer=None
        )
    logger.warning("run %s expired in the queue at attempt %s", run.public_id, run.attempt)
    answering = Answering(
        run=run, thread=run.thread, actor=Actor(run.actor_type, run.actor_id), attempt=run.attempt
    )
    seq = max(run.seq, run_events.last_seq(run.public_id)) + 1
    ended = _run_event(seq, Failed(run=run, error=RunExpiredInQueue()), answering)
    run_events.event_append(run.public_id, ended, attempt=run.attempt)
    RespondRun.objects.filter(pk=run.pk, attempt=run.attempt).update(seq=seq)
    return True


def _orphan_take_over(run: RespondRun) -> bool:
    try:
        # Queued again when its dead attempt streamed nothing; else ended in this pass.
        attempt = _take_over(run)
    except ThreadBusy:
        # Another key's answer started on the thread since (this run's lease ran out).
        attempt = None
    if attempt is None:
        return False
    run.attempt = attempt
    run_events.attempt_fence(run.public_id, attempt)
    if run_events.stream_closed(run.public_id):
        # Its content was erased (and its worker died): nothing to keep, nothing to generate.
        _release(run, attempt, code=RUN_ERASED, status=Status.CANCELLED)
        return True
    answering = Answering(
        run=run,
        thread=run.thread,
        actor=Actor(run.actor_type, run.actor_id),
        attempt=attempt,
        resumed=True,
    )
    events = run_events.events_all(run.public_id)
    partial = _last_attempt_text(events)
    if not partial.strip() and attempt <= settings.CONVMEM_RESPOND_MAX_ATTEMPTS:
        logger.warning("run %s lost its worker before any text: attempt %s", run.public_id, attempt)
        respond_dispatch(answering)
        return True
    logger.warning("run %s lost its worker: ended at attempt %s", run.public_id, attempt)
    if partial.strip():
        outcome = Outcome(
            text=partial,
            status=MessageStatus.INTERRUPTED,
            code=WORKER_LOST,
            model=chat_model_for(run.thread),
            usage=_usage_estimate(answering, partial),
            finish_reason="",
        )
        try:
            _answer_record(answering, outcome)
        except APIException as error:
            # Refused while storing: the thread was deleted meanwhile (404), say.
            _release(run, attempt, code=str(error.get_codes()))
    else:
        _release(run, attempt, code=WORKER_LOST)
    seq = max([run.seq, *(event.seq for event in events)]) + 1
    ended = _run_event(seq, Failed(run=run, error=RunLost()), answering)
    run_events.event_append(run.public_id, ended, attempt=attempt)
    RespondRun.objects.filter(pk=run.pk, attempt=attempt).update(seq=seq)
    return True


def _last_attempt_text(events: list[RunEvent]) -> str:
    """The text streamed since the last ``turn`` event (each attempt starts with one; an
    attempt is queued again only when the one before streamed nothing)."""
    parts: list[str] = []
    for event in events:
        if event.name == "turn":
            parts = []
        elif event.name == "token":
            parts.append(event.data["text"])
    return "".join(parts)
