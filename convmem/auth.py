"""Bearer API-key authentication: every API request acts for exactly one tenant."""

import logging
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings
from limits import RateLimitItemPerSecond
from limits.storage import storage_from_string
from limits.strategies import SlidingWindowCounterRateLimiter
from redis.exceptions import RedisError
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from convmem.models import SCOPE_EXPORT, ApiKey, Tenant

if TYPE_CHECKING:
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)


def _rate_limiter() -> SlidingWindowCounterRateLimiter:
    """The per-key counters: in Redis when it is configured (shared by every process), else in
    this process's memory."""
    return _limiter_on(settings.REDIS_URL)


@lru_cache(maxsize=4)
def _limiter_on(redis_url: str) -> SlidingWindowCounterRateLimiter:
    if not redis_url:
        return SlidingWindowCounterRateLimiter(storage_from_string("memory://"))
    # A Redis that is down or hung costs a request at most this long (then it fails open).
    counts = storage_from_string(redis_url, socket_connect_timeout=1, socket_timeout=1)
    return SlidingWindowCounterRateLimiter(counts)


@dataclass(frozen=True)
class TenantPrincipal:
    """``request.user`` for API calls: the tenant acting through one key."""

    tenant: Tenant
    api_key: ApiKey

    is_authenticated = True
    is_anonymous = False
    is_staff = False

    @property
    def pk(self) -> str:
        return self.api_key.pk


# What the API takes, said also when a request sent an Authorization header in another form
# ("Api-Key …", "Token …", the bare key: ``convmem.errors``).
AUTHORIZATION_FORM = "Authorization header must be 'Bearer <api key>'."


class ApiKeyAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[TenantPrincipal, ApiKey] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(AUTHORIZATION_FORM, code="invalid_api_key")
        try:
            key = parts[1].decode("ascii")
            if not key.isprintable():
                # A control character (NUL above all) would fail in PostgreSQL, not match.
                raise ApiKey.DoesNotExist
            api_key = ApiKey.objects.get_from_key(key)
        except (UnicodeDecodeError, ApiKey.DoesNotExist):
            raise exceptions.AuthenticationFailed(
                "Invalid or revoked API key.", code="invalid_api_key"
            ) from None
        return TenantPrincipal(tenant=api_key.tenant, api_key=api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="convmem"'


class IsTenant(BasePermission):
    def has_permission(self, request: Request, view: "APIView") -> bool:
        return isinstance(request.user, TenantPrincipal)


class HasExportScope(BasePermission):
    message = "This API key lacks the 'export' scope."
    code = "missing_scope"

    def has_permission(self, request: Request, view: "APIView") -> bool:
        return isinstance(request.user, TenantPrincipal) and request.user.api_key.has_scope(
            SCOPE_EXPORT
        )


class ApiKeyRateThrottle(SimpleRateThrottle):
    """``API_RATE`` per API key, as a sliding-window counter (``limits``): one Redis round trip
    per request (a script that counts and checks), whatever the rate. DRF's own throttle kept
    a timestamp per request of the window in one cache entry that it read and wrote whole: two
    round trips with up to ``API_RATE`` timestamps pickled each way, and concurrent requests
    of one key overwrote each other's counts. Without Redis (the embedded default) the counts
    are per process, as the local-memory cache's were."""

    scope = "api_key"
    reset_at = 0.0

    def allow_request(self, request: Request, view: "APIView") -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        item = RateLimitItemPerSecond(self.num_requests, self.duration)
        # Fail open: the counts live in Redis, which is also the broker. A Redis outage must
        # not take the API down with it (appends and context keep working and the memo work
        # waits in the database), so an unreachable Redis means "not throttled".
        try:
            if _rate_limiter().hit(item, key):
                return True
            self.reset_at = _rate_limiter().get_window_stats(item, key).reset_time
        except RedisError:
            logger.warning("rate-limit counts unavailable; request not throttled", exc_info=True)
            return True
        return False

    def wait(self) -> float:
        """Seconds until the window lets a request through again (``Retry-After``)."""
        return max(0.0, self.reset_at - time.time())

    def get_cache_key(self, request: Request, view: "APIView") -> str | None:
        if not isinstance(request.user, TenantPrincipal):
            return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
        return self.cache_format % {"scope": self.scope, "ident": request.user.api_key.pk}
