"""Costs carry their currency: an ISO 4217 code on each model profile, USD by default."""

import pytest
from django.core.exceptions import ValidationError

from convmem.models import ModelProfile


def rollup(kit):
    return kit.client.get("/api/v1/usage")


def test_costs_are_in_usd_by_default(acme):
    assert rollup(acme).data["currency"] == "USD"


def test_costs_are_in_the_profiles_currency(acme):
    ModelProfile.objects.create(tenant=acme.tenant, name="eu", currency="EUR")

    assert rollup(acme).data["currency"] == "EUR"


def test_a_currency_is_an_iso_code_shared_by_the_tenants_profiles(acme):
    ModelProfile.objects.create(tenant=acme.tenant, name="eu", currency="EUR")

    with pytest.raises(ValidationError, match="EUR"):
        ModelProfile(tenant=acme.tenant, name="us", currency="USD").full_clean()
    with pytest.raises(ValidationError, match="ISO 4217"):
        ModelProfile(tenant=acme.tenant, name="bad", currency="euro").full_clean()
    ModelProfile(tenant=acme.tenant, name="eu2", currency="EUR").full_clean()
