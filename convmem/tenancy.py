"""Services for tenants and API keys, shared by the admin and the management commands."""

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import transaction

from convmem.models import KNOWN_SCOPES, ApiKey, Tenant


def _clean_scopes(scopes: Iterable[str]) -> list[str]:
    cleaned = sorted(set(scopes))
    unknown = [s for s in cleaned if s not in KNOWN_SCOPES]
    if unknown:
        raise ValidationError(f"unknown scope(s): {', '.join(unknown)}; known: {KNOWN_SCOPES}")
    return cleaned


def api_key_create(*, tenant: Tenant, name: str, scopes: Iterable[str] = ()) -> tuple[ApiKey, str]:
    """Create a key for ``tenant``; returns the row and the plaintext key (shown once)."""
    return ApiKey.objects.create_key(name=name, tenant=tenant, scopes=_clean_scopes(scopes))


@transaction.atomic
def tenant_create(*, name: str, scopes: Iterable[str] = ()) -> tuple[Tenant, ApiKey, str]:
    """Create a tenant with a first API key; returns the plaintext key (shown once)."""
    tenant = Tenant(name=name)
    tenant.full_clean()
    tenant.save()
    api_key, key = api_key_create(tenant=tenant, name=f"{name} default", scopes=scopes)
    return tenant, api_key, key


def api_key_revoke(*, api_key: ApiKey) -> None:
    api_key.revoked = True
    api_key.save(update_fields=["revoked"])
