"""The respond endpoint. Thin: parse, call ``respond.services``, render JSON or SSE."""

import json
import logging
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditlog.events import actor_of
from compaction.context import RetrievedItem
from convmem.api import IDEMPOTENCY_HEADER, REPLAYED_HEADER, idempotency_parameter, tenant_of
from convmem.pricing import profile_currency
from convmem.schema import ErrorSerializer
from respond import selectors, services
from respond.models import RespondRun
from respond.serializers import RespondRequestSerializer, RespondResultSerializer
from threads.idempotency import request_fingerprint, validate_key
from threads.models import Thread
from threads.selectors import thread_get

logger = logging.getLogger(__name__)

SSE_DESCRIPTION = """Server-Sent Events, each `event: <name>` + `data: <JSON>`:

- `turn`: `{thread_id, user_message_id, assembly_id, replayed, resumed}` first;
- `token`: `{text}`, a piece of the answer, as the model streams it;
- `done`: the stored turn, as the JSON response (`RespondResult`);
- `error`: `{code, detail, thread_id, user_message_id}` instead of `done` when the answer
  cannot be completed: `model_unavailable` (the model failed mid-answer) and `answer_too_long`
  (the answer passed the content limit; it is cut there): what was streamed is stored as an
  `interrupted` turn, and a retry with the same Idempotency-Key completes it; `not_found` (the
  thread was deleted meanwhile; nothing is stored); `internal_error`. Every stream ends with
  `done` or `error`."""


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
    """``stream`` is how the answer is delivered, not what is asked: a streamed request may be
    retried without streaming (and the other way round) under the same key."""
    body = request.data
    if isinstance(body, dict):
        body = {name: value for name, value in body.items() if name != "stream"}
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


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


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
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id)
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
        if fields["stream"]:
            return _streaming_response(answering, headers)
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
