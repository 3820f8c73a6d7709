"""Choosing the model profile (budget and curation policy) of a thread."""

from compaction.models import ModelProfile
from convmem.errors import InvalidRequest
from convmem.models import Tenant


def profile_for_new_thread(*, tenant: Tenant, name: str | None) -> ModelProfile | None:
    """The named profile of the tenant, else its default one (None: the built-in defaults)."""
    if name is None:
        return ModelProfile.objects.filter(tenant=tenant, is_default=True).first()
    profile = ModelProfile.objects.filter(tenant=tenant, name=name).first()
    if profile is None:
        raise InvalidRequest(f"Unknown model profile {name!r}.", code="unknown_profile")
    return profile
