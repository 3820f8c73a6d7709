"""Tenants (the product apps calling the API) and their API keys."""

from django.db import models
from django.db.models import Q
from django.utils import timezone
from rest_framework_api_key.models import AbstractAPIKey, BaseAPIKeyManager

SCOPE_EXPORT = "export"
KNOWN_SCOPES = (SCOPE_EXPORT,)


class Tenant(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKeyManager(BaseAPIKeyManager):
    def get_usable_keys(self) -> models.QuerySet["ApiKey"]:
        """Keys that are neither revoked nor expired, with their tenant joined in."""
        return (
            super()
            .get_usable_keys()
            .filter(Q(expiry_date__isnull=True) | Q(expiry_date__gt=timezone.now()))
            .select_related("tenant")
        )


class ApiKey(AbstractAPIKey):
    """A hashed API key (djangorestframework-api-key) owned by one tenant.

    Only the prefix and a hash are stored; the full key is shown once, when it is created.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    scopes = models.JSONField(default=list, blank=True)

    objects = ApiKeyManager()

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes
