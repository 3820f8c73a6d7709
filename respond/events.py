"""The events of a run generated in a worker, in a Redis stream per run.

The worker appends each event with its sequence number as the entry id (``<seq>-0``, from 1:
``turn``, ``token``…, then ``done`` or ``error``; a first attempt's ``turn`` is appended by the
request that queued it, with the input it hands over); requests relay them as SSE with
``id:`` = seq, from the start or from a ``Last-Event-ID``. The stream is bounded (``XADD MAXLEN ~``,
``CONVMEM_RUN_EVENTS_MAXLEN``) and expires ``CONVMEM_RUN_EVENTS_TTL`` seconds after its last
event. ``done`` carries nothing: a relay reads the stored turn from the rows (so content erased
since shows erased). A cancel request is a key beside the stream, which the worker polls.

Beside the stream, a fence holds the highest attempt that claimed the run: an append of an
older attempt is refused, atomically with the append (a script). So once a takeover has raised
the fence, the worker it took the run from (late, not dead) can add nothing, and what the
stream holds is final for that attempt: its partial text can be kept, and sequence numbers
stay unique.

Redis holds the answer's text for the stream's lifetime, and the model input a request handed
over to the worker until the worker takes it (``input_hand_over``); the broker's messages
hold ids only. Erasure (``streams_close``) deletes the stream and the handed input and closes
the fence in one step: every later
append is refused (an append would create the stream again), and the worker, told so by the
refusal, stops the model (``respond.services``).

A run's keys share a Redis Cluster hash tag (``{run_…}``): the append script uses two of them,
and a script's keys must be in one slot.
"""

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

TERMINAL = frozenset({"done", "error"})
# How long one read waits for the next event before the relay checks the run's row.
READ_BLOCK_MS = 2000


@dataclass(frozen=True)
class RunEvent:
    seq: int
    name: str
    data: dict[str, Any]

    @property
    def terminal(self) -> bool:
        return self.name in TERMINAL


@lru_cache(maxsize=4)
def _client(url: str) -> redis.Redis:
    # One pool per URL; the read timeout outlasts a blocking read with room for a loaded host.
    return redis.Redis.from_url(
        url, socket_connect_timeout=2, socket_timeout=READ_BLOCK_MS / 1000 + 10
    )


def _redis() -> redis.Redis:
    return _client(settings.REDIS_URL)


def run_keys(run_public_id: str) -> tuple[str, str, str, str]:
    """The run's stream, cancel, fence and handed-input keys, in one hash slot (the tag in
    braces)."""
    return (
        _stream(run_public_id),
        _cancel_key(run_public_id),
        _fence(run_public_id),
        _input_key(run_public_id),
    )


def _stream(run_public_id: str) -> str:
    return f"convmem:run:{{{run_public_id}}}:events"


def _cancel_key(run_public_id: str) -> str:
    return f"convmem:run:{{{run_public_id}}}:cancel"


def _fence(run_public_id: str) -> str:
    return f"convmem:run:{{{run_public_id}}}:attempt"


def _input_key(run_public_id: str) -> str:
    return f"convmem:run:{{{run_public_id}}}:input"


# The fence of an erased run: above every attempt, so every append is refused, and no claim
# lowers it (a fence is only raised). An exact integer in Lua's doubles.
_FENCE_CLOSED = 2**53


_APPEND = """
local fence = tonumber(redis.call('GET', KEYS[2]) or '0')
if fence > tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], ARGV[3], 'event', ARGV[4], 'data', ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
"""

_RAISE_FENCE = """
local fence = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > fence then redis.call('SET', KEYS[1], ARGV[1]) end
redis.call('EXPIRE', KEYS[1], ARGV[2])
"""


def event_append(run_public_id: str, event: RunEvent, *, attempt: int) -> bool:
    """Append ``event`` for ``attempt`` and renew the stream's expiry, in one round trip;
    False (nothing appended) when a later attempt has taken the run over."""
    return _append_to(_redis(), run_public_id, event, attempt=attempt) == 1


def _append_to(client: Any, run_public_id: str, event: RunEvent, *, attempt: int) -> Any:
    """``_APPEND`` of ``event`` on ``client`` (a connection, or a pipeline that sends it
    later): 1 when appended, 0 when refused by the fence."""
    return client.eval(
        _APPEND,
        2,
        _stream(run_public_id),
        _fence(run_public_id),
        attempt,
        settings.CONVMEM_RUN_EVENTS_MAXLEN,
        f"{event.seq}-0",
        event.name,
        json.dumps(event.data, separators=(",", ":")),
        settings.CONVMEM_RUN_EVENTS_TTL,
    )


def attempt_fence(run_public_id: str, attempt: int) -> None:
    """Refuse from now on every append of an attempt before ``attempt`` (called by whoever
    has just claimed ``attempt``, before it appends or reads the stream as final)."""
    _redis().eval(_RAISE_FENCE, 1, _fence(run_public_id), attempt, settings.CONVMEM_RUN_EVENTS_TTL)


def last_seq(run_public_id: str) -> int:
    """The sequence number of the stream's last event (0: none, or expired)."""
    return _seq_of(_redis().xrevrange(_stream(run_public_id), count=1))


def _seq_of(last: list[Any]) -> int:
    return int(last[0][0].split(b"-")[0]) if last else 0


def input_hand_over(
    run_public_id: str, messages: list[dict[str, Any]], first: RunEvent | None = None
) -> None:
    """Keep the model input the request rendered for the worker that will generate the run
    (``attempt_start`` takes it), so that worker reads no text from the database before its
    first token. It lives as long as a queued run (``CONVMEM_RESPOND_QUEUE_SECONDS``) and is
    deleted by an erasure of the run (``streams_close``) or of any of its thread's content
    (``inputs_withdraw``): the broker's message carries ids only, this key the text.

    ``first``: a first attempt's ``turn`` event (sequence 1, ids only), appended in the same
    round trip, so the worker's first append is its first token's (``attempt_start`` reports
    it in ``last_seq``)."""
    pipe = _redis().pipeline(transaction=False)
    pipe.set(
        _input_key(run_public_id),
        json.dumps(messages, separators=(",", ":")),
        ex=settings.CONVMEM_RESPOND_QUEUE_SECONDS,
    )
    if first is not None:
        _append_to(pipe, run_public_id, first, attempt=1)
    pipe.execute()


def hand_over_withdraw(run_public_id: str) -> None:
    """Delete what ``input_hand_over`` wrote for a run whose transaction rolled back: its input
    (content) and its stream (the ``turn`` event). Best effort: a Redis that is down (often why
    the transaction failed) leaves them to expire."""
    try:
        _redis().delete(_input_key(run_public_id), _stream(run_public_id))
    except redis.RedisError as error:
        logger.warning("could not withdraw the input of run %s: %r", run_public_id, error)


def inputs_withdraw(run_public_ids: list[str]) -> None:
    """Delete the inputs handed over for these runs (a worker that finds none rebuilds the
    input from the database, as it now stands)."""
    _redis().delete(*(_input_key(run_public_id) for run_public_id in run_public_ids))


@dataclass(frozen=True)
class AttemptStart:
    """What a worker that has just claimed an attempt needs before its first event."""

    cancelled: bool
    last_seq: int
    # The input handed over by the request (``input_hand_over``), taken: None when there was
    # none (a takeover, an expired or withdrawn one).
    handed_input: list[dict[str, Any]] | None


def attempt_start(run_public_id: str, attempt: int) -> AttemptStart:
    """``attempt_fence``, then whether a cancel was requested, ``last_seq`` and the handed
    input (deleted as it is read), in one round trip (the commands run in this order)."""
    pipe = _redis().pipeline(transaction=False)
    pipe.eval(_RAISE_FENCE, 1, _fence(run_public_id), attempt, settings.CONVMEM_RUN_EVENTS_TTL)
    pipe.exists(_cancel_key(run_public_id))
    pipe.xrevrange(_stream(run_public_id), count=1)
    pipe.getdel(_input_key(run_public_id))
    _, cancelled, last, handed = pipe.execute()
    return AttemptStart(
        cancelled=bool(cancelled),
        last_seq=_seq_of(last),
        handed_input=json.loads(handed) if handed is not None else None,
    )


def events_after(run_public_id: str, seq: int, *, block_ms: int = READ_BLOCK_MS) -> list[RunEvent]:
    """The events after ``seq``, waiting up to ``block_ms`` for the first (empty: none came)."""
    try:
        answer = _redis().xread({_stream(run_public_id): f"{seq}-0"}, count=500, block=block_ms)
    except redis.TimeoutError:
        # A blocking read that outlived the socket timeout: no event came; the caller looks at
        # the run's row and reads again.
        return []
    return [
        _event(entry_id, fields) for _key, entries in answer or () for entry_id, fields in entries
    ]


def events_all(run_public_id: str) -> list[RunEvent]:
    """Every event the stream still holds, in order."""
    entries = _redis().xrange(_stream(run_public_id))
    return [_event(entry_id, fields) for entry_id, fields in entries]


def _event(entry_id: bytes, fields: dict[bytes, bytes]) -> RunEvent:
    return RunEvent(
        seq=int(entry_id.split(b"-")[0]),
        name=fields[b"event"].decode(),
        data=json.loads(fields[b"data"]),
    )


def events_follow(run_public_id: str, seq: int, *, still_running: Any) -> Iterator[RunEvent]:
    """Every event after ``seq`` until the terminal one. ``still_running()`` is asked when no
    event came for a while: False (the run ended, or its worker died and the stream expired)
    ends the relay without a terminal event."""
    while True:
        events = events_after(run_public_id, seq)
        if not events and not still_running():
            # One last look: the terminal event may have come just before the run's row said so.
            events = events_after(run_public_id, seq, block_ms=0) or []
            yield from events
            return
        for event in events:
            yield event
            seq = event.seq
            if event.terminal:
                return


def cancel_request(run_public_id: str) -> None:
    _redis().set(_cancel_key(run_public_id), b"1", ex=settings.CONVMEM_RUN_EVENTS_TTL)


def cancel_requested(run_public_id: str) -> bool:
    return bool(_redis().exists(_cancel_key(run_public_id)))


_CLOSE = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
redis.call('SET', KEYS[3], ARGV[1], 'EX', ARGV[2])
"""


def streams_close(run_public_ids: list[str]) -> None:
    """Delete the runs' streams (the answers' text), handed inputs and cancel requests, and
    close their fences, each run in one step (a script: an append lands before it, and is
    deleted, or after it, and is refused). A closed fence holds no content and expires as the stream
    would have (``CONVMEM_RUN_EVENTS_TTL``): a worker still generating meets it at its next
    event, long before (a generation's time limit is 540 s)."""
    pipe = _redis().pipeline(transaction=False)
    for run_public_id in run_public_ids:
        pipe.eval(
            _CLOSE, 4, *run_keys(run_public_id), _FENCE_CLOSED, settings.CONVMEM_RUN_EVENTS_TTL
        )
    pipe.execute()


def stream_closed(run_public_id: str) -> bool:
    """Whether the run's stream was closed by an erasure (``streams_close``)."""
    fence = _redis().get(_fence(run_public_id))
    return fence is not None and int(fence) >= _FENCE_CLOSED
