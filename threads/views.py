"""Threads and messages API. Thin: parse, call a selector or service, serialize."""

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditlog.events import actor_of
from convmem.api import decode_cursor, encode_cursor, idempotency_parameter, page_url, tenant_of
from convmem.errors import InvalidCursor, InvalidRequest
from convmem.pagination import (
    LIMIT_DESCRIPTION,
    LIMIT_SCHEMA,
    NewestFirstPagination,
    cursor_param,
    page_size,
)
from threads import search, selectors, services
from threads.idempotency import idempotent_response
from threads.models import Message, Thread
from threads.serializers import (
    MessageBatchCreateSerializer,
    MessageCreateSerializer,
    MessageEditSerializer,
    MessageSerializer,
    SearchHitSerializer,
    ThreadCreateSerializer,
    ThreadSerializer,
    ThreadUpdateSerializer,
    TreeNodeSerializer,
)
from threads.services import profile_for_new_thread

LIMIT = OpenApiParameter("limit", LIMIT_SCHEMA, description=LIMIT_DESCRIPTION)
CURSOR = OpenApiParameter("cursor", OpenApiTypes.STR, description="Opaque cursor from `next`.")


def _page(name: str, item: type[serializers.Serializer]) -> serializers.Serializer:
    return inline_serializer(
        name=name,
        fields={"results": item(many=True), "next": serializers.URLField(allow_null=True)},
    )


def _results(name: str, item: type[serializers.Serializer]) -> serializers.Serializer:
    return inline_serializer(name=name, fields={"results": item(many=True)})


class ThreadListCreateView(APIView):
    pagination_class = NewestFirstPagination

    @extend_schema(
        operation_id="threads_list",
        parameters=[OpenApiParameter("user_ref", OpenApiTypes.STR), LIMIT, CURSOR],
        responses=_page("ThreadPage", ThreadSerializer),
    )
    def get(self, request: Request) -> Response:
        threads = selectors.thread_list(
            tenant=tenant_of(request), user_ref=request.query_params.get("user_ref")
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(threads, request, view=self)
        return Response(
            {"results": ThreadSerializer(page, many=True).data, "next": paginator.get_next_link()}
        )

    @extend_schema(
        operation_id="threads_create",
        request=ThreadCreateSerializer,
        responses={201: ThreadSerializer},
        parameters=[idempotency_parameter(required=False)],
    )
    def post(self, request: Request) -> Response:
        data = ThreadCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = tenant_of(request)
        profile = profile_for_new_thread(tenant=tenant, name=data.validated_data.get("profile"))

        def perform() -> tuple[int, dict, object]:
            thread = services.thread_create(
                tenant=tenant,
                actor=actor_of(request),
                user_ref=data.validated_data["user_ref"],
                title=data.validated_data["title"],
                metadata=data.validated_data["metadata"],
                profile=profile,
                system=data.validated_data.get("system"),
                expires_at=data.validated_data.get("expires_at", "profile"),
            )
            return 201, ThreadSerializer(thread).data, thread

        return idempotent_response(request, required=False, thread=None, perform=perform)


class ThreadDetailView(APIView):
    """One thread: read it, or switch its branch / change its title and metadata. Erasing it
    (``DELETE``) is compliance work: ``audit.views.ThreadDetailView`` adds it, and that view is
    the one routed (``audit.urls``)."""

    @extend_schema(operation_id="threads_retrieve", responses=ThreadSerializer)
    def get(self, request: Request, thread_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        return Response(ThreadSerializer(thread).data)

    @extend_schema(
        operation_id="threads_partial_update",
        request=ThreadUpdateSerializer,
        responses=ThreadSerializer,
    )
    def patch(self, request: Request, thread_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        data = ThreadUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        updated = services.thread_update(
            thread=thread,
            actor=actor_of(request),
            switch_leaf="active_leaf_id" in fields,
            active_leaf_public_id=fields.get("active_leaf_id"),
            title=fields.get("title"),
            metadata=fields.get("metadata"),
            system=fields.get("system"),
            expires_at=fields.get("expires_at", "unchanged"),
        )
        return Response(ThreadSerializer(updated).data)


class MessageListCreateView(APIView):
    @extend_schema(
        operation_id="messages_path",
        description="The path ending at `leaf` (default: the active leaf). Pages walk from the "
        "leaf toward the root; each page lists its messages in root → leaf order, and `next` "
        "continues with the older messages.",
        parameters=[
            OpenApiParameter("leaf", OpenApiTypes.STR, description="A message id of the thread."),
            LIMIT,
            CURSOR,
        ],
        responses=_page("MessagePage", MessageSerializer),
    )
    def get(self, request: Request, thread_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        limit = page_size(request.query_params.get("limit"))
        cursor = cursor_param(request)
        if cursor is not None:
            leaf = self._cursor_leaf(thread, decode_cursor(cursor))
        else:
            leaf = self._leaf(thread, request.query_params.get("leaf"))
        page = selectors.path_page(thread=thread, leaf=leaf, limit=limit)
        next_url = (
            page_url(request, cursor=encode_cursor(page.older_start.public_id))
            if page.older_start
            else None
        )
        body = MessageSerializer(page.messages, many=True, context={"thread": thread}).data
        return Response({"results": body, "next": next_url})

    @staticmethod
    def _leaf(thread, leaf_id: str | None) -> Message:
        if not leaf_id:
            return thread.active_leaf
        leaf = selectors.visible_message(thread, leaf_id)
        if leaf is None:
            raise NotFound("No such message in this thread.", code="unknown_message")
        return leaf

    @staticmethod
    def _cursor_leaf(thread, leaf_id: str) -> Message:
        """The cursor names where the next page starts: a message of this thread."""
        leaf = selectors.visible_message(thread, leaf_id)
        if leaf is None:
            raise InvalidCursor()
        return leaf

    @extend_schema(
        operation_id="messages_append",
        request=MessageCreateSerializer,
        responses={201: MessageSerializer},
        parameters=[idempotency_parameter(required=True)],
    )
    def post(self, request: Request, thread_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        data = MessageCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data

        def perform() -> tuple[int, dict, object]:
            message = services.message_append(
                thread=thread,
                actor=actor_of(request),
                role=fields["role"],
                content=fields["content"],
                parent_public_id=fields.get("parent_id"),
                assembly_public_id=fields.get("assembly_id"),
                tool_calls=fields.get("tool_calls"),
                tool_call_id=fields.get("tool_call_id"),
                metadata=fields.get("metadata"),
                model=fields.get("model") or "",
                usage=fields.get("usage"),
            )
            return 201, MessageSerializer(message, context={"thread": thread}).data, thread

        return idempotent_response(request, required=True, thread=thread, perform=perform)


class MessageBatchCreateView(APIView):
    @extend_schema(
        operation_id="messages_append_batch",
        description="Append several messages in one call, all or nothing, under one "
        "Idempotency-Key: e.g. an assistant turn that calls tools together with the tool "
        "results. Each message is checked as a single append would check it (an error names "
        "its index, `messages[2]: …`) and nothing is written unless all are.",
        request=MessageBatchCreateSerializer,
        responses={201: _results("MessageBatch", MessageSerializer)},
        parameters=[idempotency_parameter(required=True)],
    )
    def post(self, request: Request, thread_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        data = MessageBatchCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        turns = [
            services.Turn(
                role=item["role"],
                content=item["content"],
                assembly_public_id=item.get("assembly_id"),
                tool_calls=item.get("tool_calls"),
                tool_call_id=item.get("tool_call_id"),
                metadata=item.get("metadata"),
                model=item.get("model") or "",
                usage=item.get("usage"),
            )
            for item in fields["messages"]
        ]

        def perform() -> tuple[int, dict, object]:
            messages = services.messages_append_batch(
                thread=thread,
                actor=actor_of(request),
                turns=turns,
                parent_public_id=fields.get("parent_id"),
            )
            body = MessageSerializer(messages, many=True, context={"thread": thread}).data
            return 201, {"results": body}, thread

        return idempotent_response(request, required=True, thread=thread, perform=perform)


class MessageEditView(APIView):
    @extend_schema(
        operation_id="messages_edit",
        description="Create a sibling of the message with new content (the original and its "
        "subtree stay). The new message becomes the active leaf.",
        request=MessageEditSerializer,
        responses={201: MessageSerializer},
        parameters=[idempotency_parameter(required=True)],
    )
    def post(self, request: Request, thread_id: str, message_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        selectors.message_get(thread=thread, public_id=message_id)
        data = MessageEditSerializer(data=request.data)
        data.is_valid(raise_exception=True)

        def perform() -> tuple[int, dict, object]:
            message = services.message_edit(
                thread=thread,
                actor=actor_of(request),
                message_public_id=message_id,
                content=data.validated_data["content"],
                tool_calls=data.validated_data.get("tool_calls"),
                metadata=data.validated_data.get("metadata"),
            )
            return 201, MessageSerializer(message, context={"thread": thread}).data, thread

        return idempotent_response(request, required=True, thread=thread, perform=perform)


class ThreadTreeView(APIView):
    @extend_schema(
        operation_id="threads_tree",
        description="Every node of the thread in creation order (parents first), with parent "
        "ids, depth and sibling position/count for branch switchers.",
        parameters=[LIMIT, CURSOR],
        responses=_page("TreePage", TreeNodeSerializer),
    )
    def get(self, request: Request, thread_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        limit = page_size(request.query_params.get("limit"))
        cursor = cursor_param(request)
        after_id = self._after(thread, decode_cursor(cursor)) if cursor is not None else None
        nodes = selectors.tree_page(thread=thread, after_id=after_id, limit=limit + 1)
        has_more = len(nodes) > limit
        nodes = nodes[:limit]
        positions = {n.message.pk: (n.sibling_index, n.sibling_count) for n in nodes}
        body = TreeNodeSerializer(
            [n.message for n in nodes],
            many=True,
            context={"thread": thread, "positions": positions},
        ).data
        next_url = (
            page_url(request, cursor=encode_cursor(nodes[-1].message.public_id))
            if has_more
            else None
        )
        return Response({"results": body, "next": next_url})

    @staticmethod
    def _after(thread, public_id: str) -> int:
        found = selectors.visible_message(thread, public_id, queryset=Message.objects.only("id"))
        if found is None:
            raise InvalidCursor()
        return found.id


SEARCH_QUERY = OpenApiParameter(
    "q",
    OpenApiTypes.STR,
    required=True,
    description="Words to find; every word must occur (case-insensitive). Erased content is "
    "never found.",
)
SEARCH_DESCRIPTION = (
    "Messages holding every word of `q`, newest first, found through the full-text index "
    "(PostgreSQL full-text search, SQLite FTS5). Each hit names its message and thread and "
    "carries a `snippet`: HTML with the text escaped and the words found in `<mark>`."
)


def _search_response(request: Request, *, thread=None, user_ref: str | None = None) -> Response:
    tenant = tenant_of(request)
    text = request.query_params.get("q", "")
    if not search.query_terms(text):
        raise InvalidRequest("q must hold at least one word to search for.", code="invalid_query")
    limit = page_size(request.query_params.get("limit"))
    cursor = request.query_params.get("cursor")
    before_id = None
    if cursor:
        before_id = search.search_cursor_position(tenant=tenant, public_id=decode_cursor(cursor))
        if before_id is None:
            raise InvalidCursor()
    page = search.tenant_message_search(
        tenant=tenant,
        text=text,
        limit=limit,
        thread=thread,
        user_ref=user_ref,
        before_id=before_id,
    )
    next_url = (
        page_url(request, cursor=encode_cursor(page.hits[-1].message_id)) if page.has_more else None
    )
    return Response({"results": SearchHitSerializer(page.hits, many=True).data, "next": next_url})


def _search_filter_thread(request: Request) -> Thread | None:
    """The ``thread`` filter of a tenant-wide search; an unknown id is a 400 (a filter, not the
    resource the URL names)."""
    thread_id = request.query_params.get("thread")
    if not thread_id:
        return None
    try:
        return selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
    except Http404:
        raise InvalidRequest(
            f"thread: no thread {thread_id} is yours.", code="unknown_thread"
        ) from None


class SearchView(APIView):
    @extend_schema(
        operation_id="search",
        description=SEARCH_DESCRIPTION + " Tenant-wide; narrow with `user_ref` or `thread`.",
        parameters=[
            SEARCH_QUERY,
            OpenApiParameter("user_ref", OpenApiTypes.STR, description="Only this user's threads."),
            OpenApiParameter("thread", OpenApiTypes.STR, description="Only this thread (thr_…)."),
            LIMIT,
            CURSOR,
        ],
        responses=_page("SearchPage", SearchHitSerializer),
    )
    def get(self, request: Request) -> Response:
        thread = _search_filter_thread(request)
        return _search_response(
            request, thread=thread, user_ref=request.query_params.get("user_ref")
        )


class ThreadSearchView(APIView):
    @extend_schema(
        operation_id="threads_search",
        description=SEARCH_DESCRIPTION + " Within one thread, every branch.",
        parameters=[SEARCH_QUERY, LIMIT, CURSOR],
        responses=_page("ThreadSearchPage", SearchHitSerializer),
    )
    def get(self, request: Request, thread_id: str) -> Response:
        thread = selectors.thread_get(tenant=tenant_of(request), public_id=thread_id)
        return _search_response(request, thread=thread)
