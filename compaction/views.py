"""Context and summaries API. Thin: parse, call a selector or service, serialize."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditlog.events import actor_of
from compaction import selectors
from compaction.context import RetrievedItem, context_assemble
from compaction.models import Summary
from compaction.replay import assembly_replay
from compaction.serializers import (
    ContextRequestSerializer,
    ContextResponseSerializer,
    ReplaySerializer,
    SummarySerializer,
    context_body,
)
from convmem.api import tenant_of
from convmem.errors import InvalidRequest
from convmem.pagination import NewestFirstPagination
from threads.selectors import thread_get
from threads.views import CURSOR, LIMIT


class ContextView(APIView):
    @extend_schema(
        operation_id="threads_context",
        description="Assemble the model input for one turn within a token budget: the system "
        "prompt, a memo in place of the older range, the task statement, retrieved items, and "
        "the recent turns verbatim with the current turn last (`system + memo + anchor + "
        "retrieved + recent + reserve <= window`). Recorded as an assembly (ids, not text); "
        "pass `assembly_id` when appending the answer. Never waits for a memo: one that is "
        "being written is reported as `pending`. A budget that cannot fit the current turn is "
        "a 400 (`budget_too_small` / `retrieved_over_budget`) with the arithmetic.",
        request=ContextRequestSerializer,
        responses={200: ContextResponseSerializer},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id)
        data = ContextRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        assembly = context_assemble(
            thread=thread,
            actor=actor_of(request),
            window_tokens=fields.get("window_tokens"),
            reserve_tokens=fields.get("reserve_tokens"),
            system=fields.get("system"),
            leaf_public_id=fields.get("leaf_id"),
            retrieved=[RetrievedItem(**item) for item in fields.get("retrieved", [])],
        )
        return Response(context_body(assembly))


class SummaryListView(APIView):
    pagination_class = NewestFirstPagination

    @extend_schema(
        operation_id="threads_summaries",
        description="The thread's memos, newest first: ranges (`first_id` … `last_id` and the "
        "`covered_ids`), status (pending, ready, stale, failed), text and faithfulness scores.",
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, enum=[s.value for s in Summary.Status]),
            LIMIT,
            CURSOR,
        ],
        responses=inline_serializer(
            name="SummaryPage",
            fields={
                "results": SummarySerializer(many=True),
                "next": serializers.URLField(allow_null=True),
            },
        ),
    )
    def get(self, request: Request, thread_id: str) -> Response:
        thread = thread_get(tenant=tenant_of(request), public_id=thread_id)
        summaries = selectors.summary_list(thread=thread)
        status = request.query_params.get("status")
        if status is not None:
            if status not in Summary.Status.values:
                raise InvalidRequest(
                    f"status must be one of {', '.join(Summary.Status.values)}.", code="invalid"
                )
            summaries = summaries.filter(status=status)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(summaries, request, view=self)
        return Response(
            {
                "results": SummarySerializer(page, many=True).data,
                "next": paginator.get_next_link(),
            }
        )


class AssemblyReplayView(APIView):
    @extend_schema(
        operation_id="assemblies_replay",
        description="Rebuild the model input of a recorded assembly from the record (message "
        "contents, summary texts, stored system/retrieved texts) with the assembler version it "
        "used, and say whether it matches the recorded hash — and if not, why.",
        responses=ReplaySerializer,
    )
    def get(self, request: Request, assembly_id: str) -> Response:
        assembly = selectors.assembly_get(tenant=tenant_of(request), public_id=assembly_id)
        return Response(ReplaySerializer(assembly_replay(assembly=assembly)).data)
