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
    "__version__",
]
