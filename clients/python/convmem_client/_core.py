"""What the sync and async clients share: configuration, the calls of every endpoint (built by
``Endpoints``, sent by each client's ``_execute``), retry decisions and error building."""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import httpx

from .errors import APIError, RateLimited
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

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"
IN_FLIGHT = "idempotency_key_in_flight"
# Answers a retry can fix: throttled, the model or the database briefly unavailable. 409 only
# with IN_FLIGHT (the first request with this key is still being answered).
RETRY_STATUSES = frozenset({429, 503})


class Unset:
    """The default of an argument whose ``None`` means something (e.g. ``active_leaf_id``)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = Unset()


class CallOptions(TypedDict, total=False):
    """Per-call options every method takes (``idempotency_key`` on writes only)."""

    timeout: float | None
    headers: Mapping[str, str]


class WriteOptions(CallOptions, total=False):
    idempotency_key: str


@dataclass(frozen=True)
class Retries:
    """How often and how long to retry: exponential backoff with jitter, ``Retry-After``
    honoured, each wait capped at ``max_backoff`` seconds."""

    max_retries: int = 5
    backoff: float = 0.5
    max_backoff: float = 20.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff)
        return min(self.backoff * 2 ** (attempt - 1) * random.uniform(0.5, 1.0), self.max_backoff)


@dataclass
class Call:
    """One endpoint call: what to send and how to read the answer. ``key`` is the
    Idempotency-Key of a write, the same on every attempt."""

    method: str
    path: str
    parse: Callable[[Any, str | None], Any]
    params: dict[str, Any] | None = None
    body: Any = None
    key: str | None = None
    timeout: Any = httpx.USE_CLIENT_DEFAULT
    headers: dict[str, str] = field(default_factory=dict)
    raw_text: bool = False
    # False: the server keeps no key for it, so it is retried only when it surely was not
    # carried out (not connected, throttled, unavailable), never after a lost answer.
    repeatable: bool = True
    # A relay of a run's events: a re-opened stream continues after `Last-Event-ID` (nothing
    # starts over) and an `error` event ends it.
    relay: bool = False

    def request_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.key is not None:
            headers["Idempotency-Key"] = self.key
        return headers


def settings(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """The base URL and key: the arguments, else CONVMEM_BASE_URL / CONVMEM_API_KEY."""
    base_url = base_url or os.environ.get("CONVMEM_BASE_URL") or DEFAULT_BASE_URL
    api_key = api_key or os.environ.get("CONVMEM_API_KEY")
    if not api_key:
        raise ValueError("an API key is needed: pass api_key= or set CONVMEM_API_KEY")
    base_url = base_url.rstrip("/")
    if not base_url.endswith(API_PREFIX):
        base_url += API_PREFIX
    return base_url, api_key


def retryable(response: httpx.Response) -> bool:
    return response.status_code in RETRY_STATUSES or (
        response.status_code == 409 and _json(response).get("code") == IN_FLIGHT
    )


def retryable_failure(error: httpx.TransportError, call: Call) -> bool:
    """A connection failure worth retrying: any for a repeatable call, else only one that kept
    the request from reaching the server."""
    return call.repeatable or isinstance(error, httpx.ConnectError | httpx.ConnectTimeout)


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None


def api_error(response: httpx.Response, key: str | None) -> APIError:
    body = _json(response) or {"code": "http_error", "detail": response.text[:500]}
    status = response.status_code
    code, detail = str(body.get("code", "http_error")), str(body.get("detail", ""))
    if status == 429:
        return RateLimited(
            status, code, detail, body=body, idempotency_key=key, retry_after=retry_after(response)
        )
    return APIError(status, code, detail, body=body, idempotency_key=key)


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def new_key() -> str:
    return str(uuid.uuid4())


def compact(values: dict[str, Any]) -> dict[str, Any]:
    """Drop the arguments left out (None or UNSET), so the server applies its defaults."""
    return {
        name: value for name, value in values.items() if value is not None and value is not UNSET
    }


def with_options(call: Call, options: Mapping[str, Any], *, write: bool) -> Call:
    """Apply the per-call options; a write gets its Idempotency-Key (the caller's, or a new one)."""
    allowed = {"timeout", "headers", "idempotency_key"} if write else {"timeout", "headers"}
    unknown = set(options) - allowed
    if unknown:
        raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unknown))}")
    if "timeout" in options:
        call.timeout = options["timeout"]
    call.headers.update(options.get("headers") or {})
    if write:
        call.key = options.get("idempotency_key") or new_key()
    return call


def one(model: Any) -> Callable[[Any, str | None], Any]:
    return lambda data, key: model.from_json(data, idempotency_key=key)


def page_of(model: Any) -> Callable[[Any, str | None], Any]:
    return lambda data, key: Page.of(model, data)


def as_is(data: Any, key: str | None) -> Any:
    return data


def read(path: str, parse: Any, params: dict[str, Any] | None, options: Any) -> Call:
    """A GET, retried freely."""
    return with_options(
        Call("GET", path, parse, params=compact(params or {})), options, write=False
    )


def write(method: str, path: str, parse: Any, body: Any, options: Any) -> Call:
    """A write: one Idempotency-Key for every attempt, so a retry replays or resumes it."""
    return with_options(Call(method, path, parse, body=body), options, write=True)


def send(method: str, path: str, parse: Any, body: Any, options: Any) -> Call:
    """A request without a key that is safe to repeat (PATCH sets state; /context records one
    more assembly)."""
    return with_options(Call(method, path, parse, body=body), options, write=False)


def once(method: str, path: str, parse: Any, body: Any, options: Any) -> Call:
    """A write the server keeps no key for (a webhook endpoint made, rotated or deleted): not
    repeated once it may have been carried out."""
    call = with_options(Call(method, path, parse, body=body), options, write=False)
    call.repeatable = False
    return call


def export(path: str, params: dict[str, Any], options: Any) -> Call:
    call = read(path, as_is, params, options)
    call.raw_text = params.get("format") not in (None, "json")
    return call


PARSERS = {
    "thread": one(Thread),
    "threads": page_of(Thread),
    "message": one(Message),
    "messages": page_of(Message),
    "batch": one(MessageBatch),
    "tree": page_of(TreeNode),
    "context": one(Context),
    "respond": one(RespondResult),
    "summaries": page_of(Summary),
    "replay": one(Replay),
    "deletion": one(DeletionRequest),
    "hits": page_of(SearchHit),
    "usage": one(UsageRollup),
    "run": one(Run),
    "import": one(ImportReport),
    "webhook": one(WebhookEndpoint),
    "webhooks": lambda data, key: [WebhookEndpoint.from_json(item) for item in data],
    "webhook_secret": one(WebhookEndpointWithSecret),
    "deliveries": page_of(WebhookDelivery),
    "nothing": lambda data, key: None,
}
