"""Bearer API-key authentication: every API request acts for exactly one tenant."""

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

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


class ApiKeyAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request: Request) -> tuple[TenantPrincipal, ApiKey] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Authorization header must be 'Bearer <api key>'.", code="invalid_api_key"
            )
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
    scope = "api_key"

    def allow_request(self, request: Request, view: "APIView") -> bool:
        # Fail open: the rate limiter's cache is Redis, which is also the broker. A Redis
        # outage must not take the API down with it (appends and context keep working and the
        # memo work waits in the database), so an unreachable cache means "not throttled".
        try:
            return super().allow_request(request, view)
        except RedisError:
            logger.warning("rate-limit cache unavailable; request not throttled", exc_info=True)
            return True

    def get_cache_key(self, request: Request, view: "APIView") -> str | None:
        if not isinstance(request.user, TenantPrincipal):
            return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
        return self.cache_format % {"scope": self.scope, "ident": request.user.api_key.pk}
