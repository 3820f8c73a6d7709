"""The respond endpoint. Thin: parse, call ``respond.services``, render JSON or SSE."""

import json
import logging
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditlog.events import actor_of
from compaction.context import RetrievedItem
from convmem.api import IDEMPOTENCY_HEADER, REPLAYED_HEADER, idempotency_parameter, tenant_of
from convmem.errors import ApiError, InvalidRequest, RunLost
from convmem.pricing import profile_currency
from convmem.schema import ErrorSerializer
from respond import events as run_events
from respond import selectors, services
from respond.models import RespondRun
from respond.serializers import (
    RespondRequestSerializer,
    RespondResultSerializer,
    RunSerializer,
)
from threads.idempotency import request_fingerprint, validate_key
from threads.models import Thread
from threads.selectors import thread_get

logger = logging.getLogger(__name__)

SSE_DESCRIPTION = """Server-Sent Events, each `event: <name>` + `data: <JSON>`:

- `turn`: `{thread_id, user_message_id, assembly_id, replayed, resumed}` first;
- `token`: `{text}`, a piece of the answer, as the model streams it;
- `done`: the stored turn, as the JSON response (`RespondResult`);
- `error`: `{code, detail, thread_id, user_message_id}` instead of `done` when the answer
  cannot be completed: `model_unavailable` (the model could not be asked, or failed
  mid-answer), `model_error` (the model refused the request) and `answer_too_long` (the answer
  passed the content limit; it is cut there): what was streamed, if anything, is stored as an
  `interrupted` turn, and a retry with the same Idempotency-Key completes it; `not_found` (the
  thread was deleted meanwhile; nothing is stored); `internal_error`. Every stream ends with
  `done` or `error`.

`turn` is sent as soon as the user turn and its model input are stored, before the model is
asked (so a streaming request answers 200 even when the model is down, with `error` after
`turn`; without streaming that is a 503 or 502)."""


# One event of the stream (what SSE-aware tools check each event against).
SSE_EVENT_SCHEMA = {
    "type": "object",
    "properties": {
        "event": {"enum": ["turn", "token", "done", "error"]},
        "data": {"type": "string", "description": "A JSON object; see the description."},
    },
    "required": ["event", "data"],
}


class JsonOrEventStream(DefaultContentNegotiation):
    """Errors and JSON bodies are rendered as JSON whatever the client accepts (an SSE client
    sends ``Accept: text/event-stream``; that must not be a 406)."""

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


def _fingerprint(request: Request) -> str:
    """``stream`` and ``background`` are how the answer is delivered, not what is asked: a
    streamed request may be retried without streaming, a background one as a stream (and the
    other way round) under the same key."""
    body = request.data
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("stream", "background")}
    return request_fingerprint(method=request.method, path=request.path, body=body)


def _result(run: RespondRun, thread: Thread) -> dict[str, Any]:
    user, answer = selectors.run_turns(run=run)
    data = {
        "thread_id": thread.public_id,
        "user_message": user,
        "assistant_message": answer,
        "assembly_id": answer.assembly_public_id,
        "finish_reason": run.finish_reason,
        "usage": answer.usage,
        "cost": selectors.answer_cost(answer=answer),
        "currency": profile_currency(thread.profile),
    }
    return RespondResultSerializer(data, context={"thread": thread}).data


def _sse(name: str, data: dict[str, Any], seq: int | None = None) -> bytes:
    head = f"id: {seq}\n" if seq is not None else ""
    body = json.dumps(data, separators=(",", ":"))
    return f"{head}event: {name}\ndata: {body}\n\n".encode()


def _run_data(run: RespondRun, thread: Thread) -> dict[str, Any]:
    return RunSerializer(run, context={"thread": thread}).data


def _relayed(run: RespondRun, thread: Thread, after: int) -> Iterator[tuple[int, str, dict]]:
    """The run's events after ``after`` from its stream, ``done`` expanded from the rows. A
    run whose stream ended without a terminal event (its worker died and is not taken over yet,
    or the stream expired after the run) ends with what its row says."""
    seq = after
    for event in run_events.events_follow(
        run.public_id, after, still_running=lambda: selectors.run_is_live(run_pk=run.pk)
    ):
        seq = event.seq
        if event.name == "done":
            run.refresh_from_db()
            yield seq, "done", _result(run, thread)
            return
        yield seq, event.name, event.data
        if event.terminal:
            return
    run.refresh_from_db()
    if run.status == RespondRun.Status.COMPLETE:
        yield max(seq, run.seq) + 1, "done", _result(run, thread)
        return
    error = RunLost()
    code = run.error_code or error.get_codes()
    # A run still streaming lost its worker and waits for its takeover, which appends the next
    # events after the last one: this end repeats the last id, so a re-attach sees them.
    ended = seq if run.status == RespondRun.Status.STREAMING else max(seq, run.seq) + 1
    yield (
        ended,
        "error",
        {
            "code": code,
            "detail": str(error.detail) if code == error.get_codes() else code,
            "status": error.status_code,
            "thread_id": thread.public_id,
            "user_message_id": run.user_message.public_id,
        },
    )


def _relay_stream(
    run: RespondRun, thread: Thread, after: int, first: run_events.RunEvent | None = None
) -> Iterator[bytes]:
    """SSE of ``_relayed``, after ``first`` (sent before anything is read) when given. The
    client going away closes this generator: the run goes on."""
    if first is not None:
        yield _sse(first.name, first.data, first.seq)
        after = first.seq
    try:
        for seq, name, data in _relayed(run, thread, after):
            yield _sse(name, data, seq)
    except Exception:
        logger.exception("relaying run %s failed", run.public_id)
        yield _sse(
            "error",
            {
                "code": "internal_error",
                "detail": "The run's events could not be read; re-attach to its events.",
                "thread_id": thread.public_id,
                "user_message_id": run.user_message.public_id,
            },
        )


def _relayed_error(data: dict[str, Any]) -> ApiError:
    error = ApiError(detail=data["detail"], code=data["code"])
    error.status_code = data.get("status", RunLost.status_code)
    return error


def _relay_json(
    run: RespondRun, thread: Thread, headers: dict[str, str], after: int = 0
) -> Response:
    """Wait for the run's end (its events after ``after``): its stored turn (201), or its
    error as a JSON error."""
    for _seq, name, data in _relayed(run, thread, after):
        if name == "done":
            return Response(data, status=201, headers=headers)
        if name == "error":
            raise _relayed_error(data)
    raise RunLost


def _event_stream(answering: services.Answering) -> Iterator[bytes]:
    """The events; a stream always ends with ``done`` or ``error``, also when storing the
    answer fails unexpectedly (logged; the response's status line was sent long ago)."""
    try:
        yield from _events(answering)
    except Exception:
        logger.exception("the answer of run %s failed while streaming", answering.run.pk)
        yield _sse(
            "error",
            {
                "code": "internal_error",
                "detail": "The answer could not be stored; retry with the same Idempotency-Key.",
                "thread_id": answering.thread.public_id,
                "user_message_id": answering.run.user_message.public_id,
            },
        )


def _events(answering: services.Answering) -> Iterator[bytes]:
    thread = answering.thread
    for event in services.respond_events(answering):
        if isinstance(event, services.Started):
            yield _sse(
                "turn",
                {
                    "thread_id": thread.public_id,
                    "user_message_id": event.run.user_message.public_id,
                    "assembly_id": event.run.assembly.public_id if event.run.assembly else None,
                    "replayed": event.replayed,
                    "resumed": event.resumed,
                },
            )
        elif isinstance(event, services.Token):
            yield _sse("token", {"text": event.text})
        elif isinstance(event, services.Finished):
            yield _sse("done", _result(event.run, thread))
        else:
            error = event.error
            yield _sse(
                "error",
                {
                    "code": error.get_codes(),
                    "detail": str(error.detail),
                    "thread_id": thread.public_id,
                    "user_message_id": event.run.user_message.public_id,
                },
            )


class RespondView(APIView):
    content_negotiation_class = JsonOrEventStream

    @extend_schema(
        operation_id="threads_respond",
        description="One call per turn: append the user's turn, assemble its model input "
        "(as `/context` does), ask the configured OpenAI-compatible model, store its answer as "
        "an assistant turn linked to that input, with `model` and `usage`. "
        "`stream: true` answers with Server-Sent Events, else with one JSON body. "
        "`Idempotency-Key` required: a retry (same body; `stream` may differ) never makes a "
        "second turn. It replays a stored answer (`Idempotent-Replayed: true`), answers 409 "
        "while another request is answering, and completes an answer that was interrupted "
        "(client gone, model failed) or whose request died: the new answer is stored as a "
        "sibling of the interrupted one (`edits_id`). 503 `model_unavailable`: the model did "
        "not answer; the user turn is kept and a retry with the key resumes. 502 "
        "`answer_too_long`: the answer passed the content limit and is stored cut, as an "
        "`interrupted` turn. What the model sends is cleaned before it is stored: NUL "
        "characters and unpaired surrogates become U+FFFD, a model name or finish reason is "
        "cut to its field, usage it reports out of range is replaced by an estimate. A 503 "
        "`service_unavailable` (the database) may come after the user turn was stored: retry "
        "with the key.",
        request=RespondRequestSerializer,
        parameters=[idempotency_parameter(required=True)],
        responses={
            201: RespondResultSerializer,
            202: OpenApiResponse(
                response=RunSerializer,
                description="`background: true`: the run, queued; follow it with `GET "
                "…/runs/{run_id}` or its events.",
            ),
            (200, "text/event-stream"): OpenApiResponse(
                response=SSE_EVENT_SCHEMA, description=SSE_DESCRIPTION
            ),
            502: OpenApiResponse(
                response=ErrorSerializer,
                description="The model refused the request (`model_error`; retrying cannot "
                "help), or its answer passed the content limit (`answer_too_long`).",
            ),
        },
    )
    def post(self, request: Request, thread_id: str) -> Response | StreamingHttpResponse:
        # The turn is appended under the thread's lock, which reads the leaf it needs.
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id, with_leaf=False)
        data = RespondRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        key = validate_key(request.headers.get(IDEMPOTENCY_HEADER), required=True)
        answering = services.respond_start(
            thread=thread,
            actor=actor_of(request),
            key=key,
            fingerprint=_fingerprint(request),
            turn=services.UserTurn(
                content=fields["content"],
                metadata=fields.get("metadata"),
                parent_public_id=fields.get("parent_id"),
            ),
            context=services.TurnContext(
                window_tokens=fields.get("window_tokens"),
                reserve_tokens=fields.get("reserve_tokens"),
                system=fields.get("system"),
                retrieved=tuple(RetrievedItem(**item) for item in fields.get("retrieved", [])),
                max_tokens=fields.get("max_tokens"),
                temperature=fields.get("temperature"),
            ),
        )
        headers = {REPLAYED_HEADER: "true"} if answering.replayed else {}
        if answering.in_worker and not answering.replayed:
            return _answer_from_worker(answering, fields, headers)
        if fields["background"]:
            if answering.replayed:
                return Response(_run_data(answering.run, thread), status=202, headers=headers)
            raise InvalidRequest(
                "background needs answers generated in a worker (CONVMEM_RESPOND_IN_WORKER).",
                code="background_unavailable",
            )
        if fields["stream"]:
            # The `turn` event leaves before the model is asked; a model that cannot be asked
            # then answers with an `error` event.
            return _streaming_response(answering, headers)
        services.respond_model_open(answering)  # 503 / 502 before anything is answered
        for event in services.respond_events(answering):
            if isinstance(event, services.Failed):
                raise event.error
            if isinstance(event, services.Finished):
                return Response(_result(event.run, thread), status=201, headers=headers)
        raise AssertionError("respond_events ended without Finished or Failed")


def _streaming_response(
    answering: services.Answering, headers: dict[str, str]
) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        _event_stream(answering), content_type="text/event-stream; charset=utf-8"
    )
    # Nothing between the model and the client may hold the tokens back.
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    for name, value in headers.items():
        response[name] = value
    return response


def _answer_from_worker(
    answering: services.Answering, fields: dict[str, Any], headers: dict[str, str]
) -> Response | StreamingHttpResponse:
    """Queue the run (unless this request re-attaches to it) and relay it: 202 with the run
    for ``background``, SSE for ``stream``, else the stored turn once the run ends."""
    run, thread = answering.run, answering.thread
    after = services.respond_dispatch(answering)  # a resumed attempt; a first one is queued
    if fields["background"]:
        return Response(_run_data(run, thread), status=202, headers=headers)
    if fields["stream"]:
        first = services.respond_first_turn(answering)
        return _sse_response(_relay_stream(run, thread, after, first), headers)
    return _relay_json(run, thread, headers, after)


def _sse_response(content: Iterator[bytes], headers: dict[str, str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(content, content_type="text/event-stream; charset=utf-8")
    # Nothing between the model and the client may hold the tokens back.
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    for name, value in headers.items():
        response[name] = value
    return response


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("Last-Event-ID") or request.query_params.get("after") or "0"
    if not raw.isdigit() or len(raw) > 12:
        raise InvalidRequest(
            "Last-Event-ID (or after) must be an event id: a non-negative integer.",
            code="invalid_last_event_id",
        )
    return int(raw)


class RunView(APIView):
    @extend_schema(
        operation_id="threads_runs_retrieve",
        description="A run of `/respond`: its state (`queued`, `running`, `completed`, "
        "`interrupted`, `cancelled`, `failed`), the sequence number reached, its turns' ids "
        "(`assistant_message_id` once an answer is stored) and its error code.",
        responses={200: RunSerializer},
    )
    def get(self, request: Request, thread_id: str, run_id: str) -> Response:
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id)
        run = selectors.run_get(thread=thread, public_id=run_id)
        return Response(_run_data(run, thread))


class RunEventsView(APIView):
    content_negotiation_class = JsonOrEventStream

    @extend_schema(
        operation_id="threads_runs_events",
        description="Re-attach to a run generated in a worker: its events as Server-Sent "
        "Events (as `/respond` with `stream: true` sends them, each with `id:` = its "
        "sequence number), from the start, or after the `Last-Event-ID` header (or `?after=`). "
        "Ends with `done` or `error`; a finished run answers its last event at once.",
        parameters=[
            OpenApiParameter(
                "Last-Event-ID",
                int,
                OpenApiParameter.HEADER,
                description="Relay the events after this sequence number.",
            ),
            OpenApiParameter(
                "after", int, description="As `Last-Event-ID`, for clients that cannot set it."
            ),
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                response=SSE_EVENT_SCHEMA, description=SSE_DESCRIPTION
            )
        },
    )
    def get(self, request: Request, thread_id: str, run_id: str) -> StreamingHttpResponse:
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id)
        run = selectors.run_get(thread=thread, public_id=run_id)
        after = _last_event_id(request)
        if not run.in_worker:
            raise InvalidRequest(
                "This run was generated in its request; read its turn from the thread.",
                code="run_not_in_worker",
            )
        return _sse_response(_relay_stream(run, thread, after), {})


class RunCancelView(APIView):
    @extend_schema(
        operation_id="threads_runs_cancel",
        request=None,
        description="Stop a run: the worker stops reading the model and stores what it "
        "generated as an `interrupted` answer (state `interrupted`; `cancelled` when nothing "
        "was generated yet). Answers 202 with the run as it is now; 409 `run_finished` when it "
        "is not running.",
        responses={202: RunSerializer},
    )
    def post(self, request: Request, thread_id: str, run_id: str) -> Response:
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id)
        run = selectors.run_get(thread=thread, public_id=run_id)
        if not run.in_worker:
            raise InvalidRequest(
                "Only runs generated in a worker can be cancelled.", code="run_not_in_worker"
            )
        services.run_cancel(run=run)
        return Response(_run_data(run, thread), status=202)
