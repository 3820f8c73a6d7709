"""The asynchronous client, ``AsyncClient``: ``Client``'s twin (same methods, awaited; the
``iter_*`` methods and streams are async iterators)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any, Unpack

import httpx
from httpx_sse import EventSource

from . import _core as core
from ._core import UNSET, Call, CallOptions, Retries, WriteOptions, as_is
from ._stream import StreamEvent, event_seq, resumable, stream_error
from ._version import __version__
from .client import _connection_error, _respond_body
from .errors import APIConnectionError
from .models import (
    Context,
    DeletionRequest,
    ImportReport,
    Message,
    MessageBatch,
    Page,
    Replay,
    RespondResult,
    Run,
    SearchHit,
    Summary,
    Thread,
    TreeNode,
    UsageRollup,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointWithSecret,
)


class AsyncResponseStream:
    """The events of one streamed ``/respond`` (``async for`` it). ``idempotency_key`` is known
    before the first event: a later ``respond``/``respond_stream`` with it resumes this turn.
    ``run_id`` is known after ``turn`` when the answer is generated in a worker (``run_events``
    re-attaches to it). ``run_events`` answers one too (without a key)."""

    def __init__(self, events: AsyncIterator[StreamEvent], idempotency_key: str | None) -> None:
        self._events = events
        self.idempotency_key = idempotency_key
        self.run_id: str | None = None
        self.result: RespondResult | None = None

    async def __aiter__(self) -> AsyncIterator[StreamEvent]:
        async for event in self._events:
            if event.type == "turn":
                self.run_id = event.data.get("run_id", self.run_id)
            if event.type == "done":
                self.result = event.result
            yield event

    async def until_done(self) -> RespondResult:
        """Read every event; the stored turn."""
        async for _ in self:
            pass
        assert self.result is not None  # the events end with `done` or raise
        return self.result


class AsyncClient:
    """``Client(base_url, api_key)``; both default to ``CONVMEM_BASE_URL`` (else
    ``http://127.0.0.1:8000``) and ``CONVMEM_API_KEY``. Every method takes ``timeout`` and
    ``headers``; writes also ``idempotency_key`` (default: a new uuid4, reused on each retry).
    Retried with backoff: connection errors and timeouts, 429 (after ``Retry-After``), 503, and
    409 ``idempotency_key_in_flight``."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = 60.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url, api_key = core.settings(base_url, api_key)
        self.retries = Retries(max_retries, backoff, max_backoff)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "User-Agent": f"convmem-client-python/{__version__}",
            **(headers or {}),
        }

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- threads -------------------------------------------------------------------------------

    async def create_thread(
        self,
        user_ref: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        profile: str | None = None,
        system: str | None = None,
        expires_at: str | None = UNSET,
        expires_in: int | None = None,
        **options: Unpack[WriteOptions],
    ) -> Thread:
        """Create a thread. ``expires_at`` (ISO 8601, in the future) or ``expires_in`` (seconds)
        sets when it is erased; left out, the profile's ``thread_ttl`` applies; None: never."""
        body = core.compact(
            {
                "user_ref": user_ref,
                "title": title,
                "metadata": metadata,
                "profile": profile,
                "system": system,
                "expires_in": expires_in,
            }
        )
        if expires_at is not UNSET:
            body["expires_at"] = expires_at
        return await self._execute(
            core.write("POST", "/threads", core.PARSERS["thread"], body, options)
        )

    async def get_thread(self, thread_id: str, **options: Unpack[CallOptions]) -> Thread:
        return await self._execute(
            core.read(f"/threads/{thread_id}", core.PARSERS["thread"], None, options)
        )

    async def update_thread(
        self,
        thread_id: str,
        *,
        title: str = UNSET,
        metadata: dict[str, Any] = UNSET,
        system: str = UNSET,
        active_leaf_id: str | None = UNSET,
        expires_at: str | None = UNSET,
        expires_in: int = UNSET,
        **options: Unpack[CallOptions],
    ) -> Thread:
        """PATCH the given fields (``system``: a new version of the thread's system prompt, ""
        clears it; ``active_leaf_id``: switch branch, None starts over from the root;
        ``expires_at``/``expires_in``: a new expiry, ``expires_at=None`` removes it)."""
        fields = {
            "title": title,
            "metadata": metadata,
            "system": system,
            "active_leaf_id": active_leaf_id,
            "expires_at": expires_at,
            "expires_in": expires_in,
        }
        body = {name: value for name, value in fields.items() if value is not UNSET}
        call = core.send("PATCH", f"/threads/{thread_id}", core.PARSERS["thread"], body, options)
        return await self._execute(call)

    async def switch_branch(
        self, thread_id: str, message_id: str | None, **options: Unpack[CallOptions]
    ) -> Thread:
        """Make ``message_id`` the active leaf (None: start over from the root)."""
        return await self.update_thread(thread_id, active_leaf_id=message_id, **options)

    async def delete_thread(
        self, thread_id: str, **options: Unpack[WriteOptions]
    ) -> DeletionRequest:
        """Erase the thread now: the executed deletion request, with its proof."""
        call = core.write(
            "DELETE", f"/threads/{thread_id}", core.PARSERS["deletion"], None, options
        )
        return await self._execute(call)

    async def list_threads(
        self,
        *,
        user_ref: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Page[Thread]:
        """One page of threads, newest first (``iter_threads`` follows the pages)."""
        params = {"user_ref": user_ref, "limit": limit, "cursor": cursor}
        return await self._execute(core.read("/threads", core.PARSERS["threads"], params, options))

    def iter_threads(
        self,
        *,
        user_ref: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> AsyncIterator[Thread]:
        params = {"user_ref": user_ref, "limit": limit}
        return self._iterate(core.read("/threads", core.PARSERS["threads"], params, options))

    # --- messages ------------------------------------------------------------------------------

    async def append(
        self,
        thread_id: str,
        role: str,
        content: str | list[dict[str, Any]] | None,
        *,
        parent_id: str | None = None,
        assembly_id: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        model: str | None = None,
        usage: dict[str, Any] | None = None,
        **options: Unpack[WriteOptions],
    ) -> Message:
        """Append a message (under ``parent_id``, default the active leaf)."""
        body = {
            "role": role,
            "content": content,
            **core.compact(
                {
                    "parent_id": parent_id,
                    "assembly_id": assembly_id,
                    "tool_calls": tool_calls,
                    "tool_call_id": tool_call_id,
                    "metadata": metadata,
                    "model": model,
                    "usage": usage,
                }
            ),
        }
        path = f"/threads/{thread_id}/messages"
        return await self._execute(core.write("POST", path, core.PARSERS["message"], body, options))

    async def append_batch(
        self,
        thread_id: str,
        messages: list[dict[str, Any]],
        *,
        parent_id: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> MessageBatch:
        """Append several messages, all or nothing, under one key (e.g. an assistant turn
        calling tools with the tool results)."""
        body = core.compact({"messages": messages, "parent_id": parent_id})
        path = f"/threads/{thread_id}/messages:batch"
        return await self._execute(core.write("POST", path, core.PARSERS["batch"], body, options))

    async def edit(
        self,
        thread_id: str,
        message_id: str,
        content: str | list[dict[str, Any]] | None,
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
        **options: Unpack[WriteOptions],
    ) -> Message:
        """A new sibling of the message with new content; it becomes the active leaf."""
        body = {
            "content": content,
            **core.compact({"tool_calls": tool_calls, "metadata": metadata}),
        }
        path = f"/threads/{thread_id}/messages/{message_id}/edit"
        return await self._execute(core.write("POST", path, core.PARSERS["message"], body, options))

    async def redact(
        self,
        thread_id: str,
        message_id: str,
        *,
        reason: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> DeletionRequest:
        """Erase one message's content now: the executed deletion request, with its proof."""
        path = f"/threads/{thread_id}/messages/{message_id}/redact"
        body = core.compact({"reason": reason})
        return await self._execute(
            core.write("POST", path, core.PARSERS["deletion"], body, options)
        )

    async def list_messages(
        self,
        thread_id: str,
        *,
        leaf: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Page[Message]:
        """One page of the path ending at ``leaf`` (default: the active leaf). Pages walk from
        the leaf toward the root; each lists its messages root → leaf."""
        params = {"leaf": leaf, "limit": limit, "cursor": cursor}
        path = f"/threads/{thread_id}/messages"
        return await self._execute(core.read(path, core.PARSERS["messages"], params, options))

    async def iter_messages(
        self,
        thread_id: str,
        *,
        leaf: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> AsyncIterator[Message]:
        """The path from the leaf back toward the root, newest first, a page at a time."""
        params = {"leaf": leaf, "limit": limit}
        call = core.read(
            f"/threads/{thread_id}/messages", core.PARSERS["messages"], params, options
        )
        async for page in self._pages(call):
            for message in reversed(page.results):
                yield message

    async def messages(
        self,
        thread_id: str,
        *,
        leaf: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> list[Message]:
        """The whole path root → leaf (the active leaf by default), ``limit`` a page."""
        newest_first = [
            message
            async for message in self.iter_messages(thread_id, leaf=leaf, limit=limit, **options)
        ]
        return list(reversed(newest_first))

    async def tree(
        self,
        thread_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Page[TreeNode]:
        """One page of every node of the thread, parents first, with sibling positions."""
        params = {"limit": limit, "cursor": cursor}
        path = f"/threads/{thread_id}/tree"
        return await self._execute(core.read(path, core.PARSERS["tree"], params, options))

    def iter_tree(
        self, thread_id: str, *, limit: int | None = None, **options: Unpack[CallOptions]
    ) -> AsyncIterator[TreeNode]:
        call = core.read(
            f"/threads/{thread_id}/tree", core.PARSERS["tree"], {"limit": limit}, options
        )
        return self._iterate(call)

    # --- model input and answers ---------------------------------------------------------------

    async def context(
        self,
        thread_id: str,
        *,
        window_tokens: int | None = None,
        reserve_tokens: int | None = None,
        system: str | None = None,
        leaf_id: str | None = None,
        retrieved: list[dict[str, str]] | None = None,
        **options: Unpack[CallOptions],
    ) -> Context:
        """Assemble the model input of the next turn within the budget."""
        body = core.compact(
            {
                "window_tokens": window_tokens,
                "reserve_tokens": reserve_tokens,
                "system": system,
                "leaf_id": leaf_id,
                "retrieved": retrieved,
            }
        )
        path = f"/threads/{thread_id}/context"
        return await self._execute(core.send("POST", path, core.PARSERS["context"], body, options))

    async def respond(
        self,
        thread_id: str,
        content: str | list[dict[str, Any]],
        *,
        window_tokens: int | None = None,
        reserve_tokens: int | None = None,
        system: str | None = None,
        retrieved: list[dict[str, str]] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_id: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        background: bool = False,
        **options: Unpack[WriteOptions],
    ) -> RespondResult | Run:
        """One turn, answered: the user turn is stored, the model asked, its answer stored.
        A 503 (the model down, ``queue_unavailable``, ``run_lost``: its worker stopped), a lost
        answer or a 409 ``idempotency_key_in_flight`` are retried with the same key, which
        resumes the stored turn; ``409 thread_busy`` (another answer is being generated on the
        thread) is not. When the retries run out the error carries the key, and
        ``respond(…, idempotency_key=error.idempotency_key)`` resumes it later.

        ``background=True`` (answers generated in a worker): the ``Run`` at once (202); follow
        it with ``get_run`` or ``run_events``."""
        body = _respond_body(locals(), stream=False)
        if background:
            body["background"] = True
        path = f"/threads/{thread_id}/respond"
        parse = core.PARSERS["run" if background else "respond"]
        return await self._execute(core.write("POST", path, parse, body, options))

    def respond_stream(
        self,
        thread_id: str,
        content: str | list[dict[str, Any]],
        *,
        window_tokens: int | None = None,
        reserve_tokens: int | None = None,
        system: str | None = None,
        retrieved: list[dict[str, str]] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_id: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        **options: Unpack[WriteOptions],
    ) -> AsyncResponseStream:
        """One turn, streamed: ``turn``, ``token``…, ``done`` (``StreamEvent``). A stream that
        ends early (connection cut, model failed mid-answer) is re-opened with the same key
        (and ``Last-Event-ID``), after a ``restart`` event: the answer starts over."""
        body = _respond_body(locals(), stream=True)
        path = f"/threads/{thread_id}/respond"
        call = core.write("POST", path, core.PARSERS["respond"], body, options)
        assert call.key is not None
        return AsyncResponseStream(self._stream(call), call.key)

    # --- runs: answers generated in a worker ---------------------------------------------------

    async def get_run(self, thread_id: str, run_id: str, **options: Unpack[CallOptions]) -> Run:
        """A run's state (``queued`` … ``completed``), and its answer's id once stored."""
        path = f"/threads/{thread_id}/runs/{run_id}"
        return await self._execute(core.read(path, core.PARSERS["run"], None, options))

    async def cancel_run(self, thread_id: str, run_id: str, **options: Unpack[CallOptions]) -> Run:
        """Ask the worker to stop: what it generated is stored as an ``interrupted`` answer.
        ``409 run_finished`` (not retried) when the run is not running any more."""
        path = f"/threads/{thread_id}/runs/{run_id}/cancel"
        return await self._execute(core.send("POST", path, core.PARSERS["run"], None, options))

    def run_events(
        self,
        thread_id: str,
        run_id: str,
        last_event_id: str | int | None = None,
        **options: Unpack[CallOptions],
    ) -> AsyncResponseStream:
        """A run's events (``turn``, ``token``…, ``done``), from the start or after
        ``last_event_id``. A dropped connection is re-opened after the last ``id:`` seen, so
        every token comes once (a ``restart`` only when a takeover asked the model again); an
        ``error`` event (``run_cancelled``, ``run_lost``, the model's error) is raised:
        ``run_lost`` is resumed by ``respond`` with the run's Idempotency-Key."""
        call = core.read(f"/threads/{thread_id}/runs/{run_id}/events", as_is, None, options)
        call.relay = True
        if last_event_id is not None:
            call.headers["Last-Event-ID"] = str(last_event_id)
        return AsyncResponseStream(self._stream(call), None)

    # --- imports and webhook endpoints ---------------------------------------------------------

    async def import_conversations(
        self,
        data: list[Any] | dict[str, Any],
        *,
        user_ref: str | None = None,
        format: str | None = None,
        **options: Unpack[CallOptions],
    ) -> ImportReport:
        """Import exported conversations (``data``: the parsed file; ChatGPT's or Claude's
        ``conversations.json``, or a convmem JSON export), one thread each. ``user_ref`` is
        needed for ChatGPT and Claude. Safe to retry: a conversation imported before is
        ``skipped``."""
        body = core.compact({"data": data, "user_ref": user_ref, "format": format})
        return await self._execute(
            core.send("POST", "/imports", core.PARSERS["import"], body, options)
        )

    async def list_webhook_endpoints(self, **options: Unpack[CallOptions]) -> list[WebhookEndpoint]:
        """Every active endpoint of the tenant, oldest first (one list, not paged)."""
        return await self._execute(
            core.read("/webhook-endpoints", core.PARSERS["webhooks"], None, options)
        )

    async def iter_webhook_endpoints(
        self, **options: Unpack[CallOptions]
    ) -> AsyncIterator[WebhookEndpoint]:
        for endpoint in await self.list_webhook_endpoints(**options):
            yield endpoint

    async def create_webhook_endpoint(
        self, url: str, events: list[str], **options: Unpack[CallOptions]
    ) -> WebhookEndpointWithSecret:
        """Subscribe ``url`` to ``events`` (``response.completed``, ``response.failed``,
        ``memo.ready``, ``deletion.completed``); the result has the signing ``secret``, shown
        only now. The server keeps no Idempotency-Key for it: not retried once it may have
        been carried out (a connection lost after sending raises ``APIConnectionError``; list
        the endpoints before creating again)."""
        body = {"url": url, "events": events}
        call = core.once(
            "POST", "/webhook-endpoints", core.PARSERS["webhook_secret"], body, options
        )
        return await self._execute(call)

    async def get_webhook_endpoint(
        self, endpoint_id: str, **options: Unpack[CallOptions]
    ) -> WebhookEndpoint:
        path = f"/webhook-endpoints/{endpoint_id}"
        return await self._execute(core.read(path, core.PARSERS["webhook"], None, options))

    async def delete_webhook_endpoint(
        self, endpoint_id: str, **options: Unpack[CallOptions]
    ) -> None:
        """Unsubscribe (not retried once it may have been carried out: a repeat is a 404)."""
        path = f"/webhook-endpoints/{endpoint_id}"
        await self._execute(core.once("DELETE", path, core.PARSERS["nothing"], None, options))

    async def update_webhook_endpoint(
        self,
        endpoint_id: str,
        *,
        url: str | None = None,
        events: list[str] | None = None,
        **options: Unpack[CallOptions],
    ) -> WebhookEndpoint:
        """Change ``url`` or ``events`` (checked as at creation); the secret stays."""
        body = core.compact({"url": url, "events": events})
        path = f"/webhook-endpoints/{endpoint_id}"
        return await self._execute(core.send("PATCH", path, core.PARSERS["webhook"], body, options))

    async def webhook_deliveries(
        self,
        endpoint_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Page[WebhookDelivery]:
        """One page of the endpoint's delivery log, newest first."""
        params = {"limit": limit, "cursor": cursor}
        path = f"/webhook-endpoints/{endpoint_id}/deliveries"
        return await self._execute(core.read(path, core.PARSERS["deliveries"], params, options))

    def iter_webhook_deliveries(
        self, endpoint_id: str, *, limit: int | None = None, **options: Unpack[CallOptions]
    ) -> AsyncIterator[WebhookDelivery]:
        path = f"/webhook-endpoints/{endpoint_id}/deliveries"
        return self._iterate(core.read(path, core.PARSERS["deliveries"], {"limit": limit}, options))

    async def rotate_webhook_secret(
        self, endpoint_id: str, **options: Unpack[CallOptions]
    ) -> WebhookEndpointWithSecret:
        """A new signing secret; the old one keeps signing beside it for a while (24 h by
        default). Not retried once it may have been carried out."""
        path = f"/webhook-endpoints/{endpoint_id}/rotate-secret"
        call = core.once("POST", path, core.PARSERS["webhook_secret"], None, options)
        return await self._execute(call)

    # --- memos, replay, search -----------------------------------------------------------------

    async def summaries(
        self,
        thread_id: str,
        *,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Page[Summary]:
        """One page of the thread's memos, newest first."""
        params = {"status": status, "limit": limit, "cursor": cursor}
        path = f"/threads/{thread_id}/summaries"
        return await self._execute(core.read(path, core.PARSERS["summaries"], params, options))

    def iter_summaries(
        self,
        thread_id: str,
        *,
        status: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> AsyncIterator[Summary]:
        params = {"status": status, "limit": limit}
        path = f"/threads/{thread_id}/summaries"
        return self._iterate(core.read(path, core.PARSERS["summaries"], params, options))

    async def replay(self, assembly_id: str, **options: Unpack[CallOptions]) -> Replay:
        """Rebuild a recorded model input and check it against its hash."""
        path = f"/assemblies/{assembly_id}/replay"
        return await self._execute(core.read(path, core.PARSERS["replay"], None, options))

    async def search(
        self,
        q: str,
        *,
        user_ref: str | None = None,
        thread: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Page[SearchHit]:
        """One page of messages holding every word of ``q``, tenant-wide, newest first."""
        params = {"q": q, "user_ref": user_ref, "thread": thread, "limit": limit, "cursor": cursor}
        return await self._execute(core.read("/search", core.PARSERS["hits"], params, options))

    def iter_search(
        self,
        q: str,
        *,
        user_ref: str | None = None,
        thread: str | None = None,
        limit: int | None = None,
        **options: Unpack[CallOptions],
    ) -> AsyncIterator[SearchHit]:
        params = {"q": q, "user_ref": user_ref, "thread": thread, "limit": limit}
        return self._iterate(core.read("/search", core.PARSERS["hits"], params, options))

    async def search_thread(
        self,
        thread_id: str,
        q: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[CallOptions],
    ) -> Page[SearchHit]:
        """One page of the thread's messages (every branch) holding every word of ``q``."""
        params = {"q": q, "limit": limit, "cursor": cursor}
        path = f"/threads/{thread_id}/search"
        return await self._execute(core.read(path, core.PARSERS["hits"], params, options))

    # --- exports, erasure, usage ---------------------------------------------------------------

    async def export_thread(
        self, thread_id: str, *, format: str = "json", **options: Unpack[CallOptions]
    ) -> Any:
        """The thread's full history (``convmem.export/2``): parsed JSON, or the text of
        ``format="jsonl"`` / ``"html"``. Needs the ``export`` scope."""
        path = f"/threads/{thread_id}/export"
        return await self._execute(core.export(path, {"format": format}, options))

    async def export_user(
        self, user_ref: str, *, format: str = "json", **options: Unpack[CallOptions]
    ) -> Any:
        """Every thread of one end user, as ``export_thread``."""
        return await self._execute(
            core.export("/exports", {"user_ref": user_ref, "format": format}, options)
        )

    async def create_deletion_request(
        self,
        *,
        user_ref: str | None = None,
        thread_id: str | None = None,
        reason: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> DeletionRequest:
        """File an erasure request for an end user or a thread (staff approve it)."""
        body = core.compact({"user_ref": user_ref, "thread_id": thread_id, "reason": reason})
        call = core.write("POST", "/deletion-requests", core.PARSERS["deletion"], body, options)
        return await self._execute(call)

    async def get_deletion_request(
        self, request_id: str, **options: Unpack[CallOptions]
    ) -> DeletionRequest:
        path = f"/deletion-requests/{request_id}"
        return await self._execute(core.read(path, core.PARSERS["deletion"], None, options))

    async def usage(
        self,
        *,
        start: str | None = None,
        end: str | None = None,
        group_by: str | None = None,
        user_ref: str | None = None,
        **options: Unpack[CallOptions],
    ) -> UsageRollup:
        """Tokens and cost per day or month (``start``/``end``: ISO dates, both included)."""
        params = {"from": start, "to": end, "group_by": group_by, "user_ref": user_ref}
        return await self._execute(core.read("/usage", core.PARSERS["usage"], params, options))

    # --- plumbing ------------------------------------------------------------------------------

    async def _execute(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method,
                    self._url(call.path),
                    json=call.body,
                    params=call.params,
                    headers={**self._headers, **call.request_headers()},
                    timeout=call.timeout,
                )
            except httpx.TransportError as error:
                if attempt >= self.retries.max_retries or not core.retryable_failure(error, call):
                    raise _connection_error(error, call.key) from error
                wait = None
            else:
                if response.status_code == 204:
                    return call.parse(None, call.key)
                if response.status_code < 400:
                    return call.parse(response.text if call.raw_text else response.json(), call.key)
                if not core.retryable(response) or attempt >= self.retries.max_retries:
                    raise core.api_error(response, call.key)
                wait = core.retry_after(response)
            attempt += 1
            await asyncio.sleep(self.retries.delay(attempt, wait))

    async def _stream(self, call: Call) -> AsyncIterator[StreamEvent]:
        attempt, last_id, server_retry = 0, None, None
        shown = False
        # The highest event number a connection brought. A connection cut after it brought
        # newer events does not count against ``max_retries``: the answer moved on, so a long
        # one outlives any number of cuts. A resumable ``error`` event (``run_lost``) counts.
        furthest = 0
        while True:
            if not call.relay:
                # A respond stream re-opened with its key starts over; a relay continues the
                # sequence, so what it showed before a cut stays shown.
                shown = False
            headers = {**self._headers, **call.request_headers(), "Accept": "text/event-stream"}
            if last_id:
                headers["Last-Event-ID"] = last_id  # a relay continues after it
            reached, told_to_resume = furthest, False
            try:
                async with self._http.stream(
                    call.method,
                    self._url(call.path),
                    json=call.body,
                    headers=headers,
                    timeout=call.timeout,
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        if not core.retryable(response) or attempt >= self.retries.max_retries:
                            raise core.api_error(response, call.key)
                        attempt += 1
                        await asyncio.sleep(self.retries.delay(attempt, core.retry_after(response)))
                        continue
                    async for sse in EventSource(response).aiter_sse():
                        last_id = sse.id or last_id
                        reached = max(reached, event_seq(sse.id))
                        server_retry = sse.retry if sse.retry is not None else server_retry
                        if sse.event == "error":
                            error = stream_error(sse.json(), call.key)
                            if (
                                resumable(error)
                                and not call.relay
                                and attempt < self.retries.max_retries
                            ):
                                told_to_resume = True
                                break
                            raise error
                        data = sse.json()
                        if sse.event == "turn" and shown and data.get("resumed"):
                            # A takeover asked the model again: the answer starts over.
                            yield StreamEvent("restart", {"attempt": attempt}, None, None, call.key)
                        yield StreamEvent(sse.event, data, sse.id or None, sse.retry, call.key)
                        shown = True
                        if sse.event == "done":
                            return
            except httpx.TransportError as error:
                if attempt >= self.retries.max_retries and reached <= furthest:
                    raise _connection_error(error, call.key) from error
            if reached > furthest and not told_to_resume:
                attempt = 0
            furthest = max(furthest, reached)
            attempt += 1
            if attempt > self.retries.max_retries:
                raise APIConnectionError(
                    "the stream kept ending before `done`", idempotency_key=call.key
                )
            if shown and not call.relay:
                yield StreamEvent("restart", {"attempt": attempt}, idempotency_key=call.key)
            wait = server_retry / 1000 if server_retry is not None else None
            await asyncio.sleep(self.retries.delay(attempt, wait))

    async def _pages(self, call: Call) -> AsyncIterator[Page[Any]]:
        while True:
            page = await self._execute(call)
            yield page
            if not page.next:
                return
            call = replace(call, path=page.next, params=None)  # `next` holds the query

    async def _iterate(self, call: Call) -> AsyncIterator[Any]:
        async for page in self._pages(call):
            for item in page.results:
                yield item

    def _url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else self.base_url + path
