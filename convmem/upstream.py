"""Rules shared by the two clients of OpenAI-compatible servers: the memo writer
(``compaction.backends.openai_compat``) and the chat model (``respond.chat``)."""

from urllib.parse import urlsplit, urlunsplit

# The statuses worth retrying, as the OpenAI SDK's own retry judges them: timeout, lock
# conflict, rate limit; and every 5xx.
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def status_is_retryable(status: int) -> bool:
    """Whether another attempt after this HTTP status can succeed."""
    return status in RETRYABLE_STATUSES or status >= 500


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries a user or password (``https://user:secret@host/…``)."""
    parts = urlsplit(url)
    return parts.username is not None or parts.password is not None


def url_for_logs(url: str) -> str:
    """``url`` without the credentials it may carry."""
    if not has_credentials(url):
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))
