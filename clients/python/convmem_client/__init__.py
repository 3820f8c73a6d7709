"""The Python client of the convmem API: sync (``Client``) and async (``AsyncClient``), typed
results, safe retries.

Every write sends an ``Idempotency-Key`` (yours via ``idempotency_key=``, else a new uuid4),
reuses it on each retry, and exposes it on the result and on the error: a retry can only replay
or resume the first request, never write twice. See clients/python/README.md.
"""

from ._core import UNSET, Retries
from ._stream import StreamEvent
from ._version import __version__
from .async_client import AsyncClient, AsyncResponseStream
from .client import Client, ResponseStream
from .errors import APIConnectionError, APIError, APITimeoutError, ConvmemError, RateLimited
from .models import (
    ChatMessage,
    Context,
    DeletionRequest,
    ImportReport,
    ImportResult,
    MemoError,
    MemoLag,
    MemoSection,
    Message,
    MessageBatch,
    Page,
    Prefix,
    Replay,
    Resource,
    RespondResult,
    Run,
    SearchHit,
    Sections,
    Summary,
    SystemSection,
    Thread,
    Tokens,
    TreeNode,
    Usage,
    UsagePeriod,
    UsageRollup,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEndpointWithSecret,
)

__all__ = [
    "UNSET",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AsyncClient",
    "AsyncResponseStream",
    "ChatMessage",
    "Client",
    "Context",
    "ConvmemError",
    "DeletionRequest",
    "ImportReport",
    "ImportResult",
    "MemoError",
    "MemoLag",
    "MemoSection",
    "Message",
    "MessageBatch",
    "Page",
    "Prefix",
    "RateLimited",
    "Replay",
    "Resource",
    "RespondResult",
    "ResponseStream",
    "Retries",
    "Run",
    "SearchHit",
    "Sections",
    "StreamEvent",
    "Summary",
    "SystemSection",
    "Thread",
    "Tokens",
    "TreeNode",
    "Usage",
    "UsagePeriod",
    "UsageRollup",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhookEndpointWithSecret",
    "__version__",
]
