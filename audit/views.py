"""Compliance API: exports, deletion requests and self-service erasure. Thin: parse, call a
selector or service."""

from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit import deletion, exports, selectors
from audit.serializers import (
    DeletionRequestCreateSerializer,
    DeletionRequestSerializer,
    RedactRequestSerializer,
)
from auditlog.events import actor_of
from convmem.api import idempotency_parameter, tenant_of
from convmem.auth import HasExportScope, IsTenant
from convmem.errors import InvalidRequest
from convmem.schema import LEGAL_HOLD_RESPONSE, ErrorSerializer
from threads import views as threads_views
from threads.idempotency import idempotent_response
from threads.models import Thread
from threads.selectors import message_get, thread_get, thread_get_for_deletion


class IgnoreFormatParameter(DefaultContentNegotiation):
    """``?format=`` picks the export encoding here, not a DRF renderer; errors stay JSON."""

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


FORMAT = OpenApiParameter(
    "format",
    OpenApiTypes.STR,
    enum=list(exports.FORMATS),
    description="`json` (default): one document; `jsonl`: JSON Lines, one record per line; "
    "`html`: a self-contained page the person the data is about can read (GDPR Art. 15): "
    "their conversations in order, branches marked, tool calls in words; `pdf`: the same page "
    "as a PDF (not streamed: answered once printed).",
)
EXPORT_RESPONSES = {
    (200, "application/json"): OpenApiTypes.OBJECT,
    (200, "application/x-ndjson"): OpenApiTypes.STR,
    (200, "text/html"): OpenApiTypes.STR,
    (200, "application/pdf"): OpenApiTypes.BINARY,
}


def _format(request: Request) -> str:
    fmt = request.query_params.get("format", "json")
    if fmt not in exports.FORMATS:
        raise InvalidRequest(
            f"format must be one of {', '.join(exports.FORMATS)}.", code="invalid_format"
        )
    return fmt


class ThreadExportView(APIView):
    permission_classes = [IsTenant, HasExportScope]
    content_negotiation_class = IgnoreFormatParameter

    @extend_schema(
        operation_id="threads_export",
        description="The thread's full history in the `convmem.export/2` format (see "
        "docs/export-schema.md): every message of every branch, summaries, assembly records, "
        "audit events, deletion requests with their proof. Streamed. Needs the `export` scope.",
        parameters=[FORMAT],
        responses=EXPORT_RESPONSES,
    )
    def get(self, request: Request, thread_id: str) -> HttpResponseBase:
        tenant = tenant_of(request)
        fmt = _format(request)
        thread = thread_get(tenant=tenant, public_id=thread_id)
        export = exports.export_begin(
            tenant=tenant, actor=actor_of(request), thread=thread, fmt=fmt
        )
        return export.response()


class UserExportView(APIView):
    permission_classes = [IsTenant, HasExportScope]
    content_negotiation_class = IgnoreFormatParameter

    @extend_schema(
        operation_id="exports_user",
        description="The full history of every thread of one end user (`user_ref`) of the "
        "caller's tenant, in the `convmem.export/2` format. Streamed. Needs the `export` scope.",
        parameters=[
            OpenApiParameter("user_ref", {"type": "string", "minLength": 1}, required=True),
            FORMAT,
        ],
        responses=EXPORT_RESPONSES,
    )
    def get(self, request: Request) -> HttpResponseBase:
        user_ref = request.query_params.get("user_ref", "")
        if not user_ref:
            raise InvalidRequest("user_ref is required.", code="invalid")
        export = exports.export_begin(
            tenant=tenant_of(request),
            actor=actor_of(request),
            user_ref=user_ref,
            fmt=_format(request),
        )
        return export.response()


class ThreadDetailView(threads_views.ThreadDetailView):
    """The thread resource (``GET``, ``PATCH`` from threads) with ``DELETE``: erasure is
    compliance work, so it is added here, and ``audit.urls`` routes the thread's URL to this
    view (before ``threads.urls``, which has no route of its own for it)."""

    @extend_schema(
        operation_id="threads_destroy",
        description="Erase the thread, as an executed deletion request does: message content "
        "(tombstoned: ids and tree stay for the audit trail), title and metadata, the memos, "
        "recorded snapshots and stored responses that copied it, and system prompts or "
        "retrieved texts no other thread used. Runs at once and answers the executed deletion "
        "request with its proof; the thread then answers 404. 423 `legal_hold` while a legal "
        "hold covers the thread or its user (nothing is erased).",
        parameters=[idempotency_parameter(required=False)],
        responses={200: DeletionRequestSerializer, 423: LEGAL_HOLD_RESPONSE},
    )
    def delete(self, request: Request, thread_id: str) -> Response:
        # Deleted threads too: a retry under the same Idempotency-Key replays the proof.
        thread = thread_get_for_deletion(tenant=tenant_of(request), public_id=thread_id)

        def perform() -> tuple[int, dict, object]:
            if thread.deleted_at is not None:
                raise NotFound("Not found.")
            erased = deletion.deletion_self_service(
                tenant=thread.tenant, actor=actor_of(request), thread=thread
            )
            return 200, DeletionRequestSerializer(erased).data, thread

        return idempotent_response(request, required=False, thread=thread, perform=perform)


class DeletionRequestCreateView(APIView):
    @extend_schema(
        operation_id="deletion_requests_create",
        description="File a request to erase an end user's data (`user_ref`: all their "
        "threads) or one thread. Answers 202: staff with the compliance permission approve or "
        "reject it, then execute it; poll `GET` for the status.",
        request=DeletionRequestCreateSerializer,
        responses={202: DeletionRequestSerializer},
        parameters=[idempotency_parameter(required=False)],
    )
    def post(self, request: Request) -> Response:
        data = DeletionRequestCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        tenant = tenant_of(request)
        thread = None
        if "thread_id" in fields:
            thread = Thread.objects.filter(tenant=tenant, public_id=fields["thread_id"]).first()
            if thread is None:
                raise InvalidRequest(
                    f"thread_id {fields['thread_id']!r} is not a thread of this tenant.",
                    code="unknown_thread",
                )

        def perform() -> tuple[int, dict, Thread | None]:
            filed = deletion.deletion_request_file(
                tenant=tenant,
                actor=actor_of(request),
                user_ref=fields.get("user_ref", ""),
                thread=thread,
                reason=fields["reason"],
            )
            return 202, DeletionRequestSerializer(filed).data, thread

        return idempotent_response(request, required=False, thread=thread, perform=perform)


class MessageRedactView(APIView):
    @extend_schema(
        operation_id="messages_redact",
        description="Erase one message's content (a redaction): the message stays in the tree "
        "as a tombstone (`erased: true`), and the memos that covered it (stale, rebuilt from "
        "the originals), recorded snapshots and stored responses that copied it are erased "
        "too. Runs at once and answers the executed deletion request with its proof. 423 "
        "`legal_hold` under a legal hold; 409 `already_erased` for an erased message.",
        request=RedactRequestSerializer,
        parameters=[idempotency_parameter(required=False)],
        responses={
            200: DeletionRequestSerializer,
            409: OpenApiResponse(
                response=ErrorSerializer,
                description="`already_erased`, or an Idempotency-Key still in flight.",
            ),
            423: LEGAL_HOLD_RESPONSE,
        },
    )
    def post(self, request: Request, thread_id: str, message_id: str) -> Response:
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id)
        message = message_get(thread=thread, public_id=message_id)
        data = RedactRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)

        def perform() -> tuple[int, dict, Thread | None]:
            erased = deletion.deletion_self_service(
                tenant=thread.tenant,
                actor=actor_of(request),
                thread=thread,
                message=message,
                reason=data.validated_data["reason"],
            )
            return 200, DeletionRequestSerializer(erased).data, thread

        return idempotent_response(request, required=False, thread=thread, perform=perform)


class DeletionRequestDetailView(APIView):
    @extend_schema(operation_id="deletion_requests_retrieve", responses=DeletionRequestSerializer)
    def get(self, request: Request, request_id: str) -> Response:
        found = selectors.deletion_request_get(tenant=tenant_of(request), public_id=request_id)
        return Response(DeletionRequestSerializer(found).data)
