"""Management commands create_tenant / create_api_key: the key is the last word printed."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from convmem.models import ApiKey, Tenant


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def last_word(output: str) -> str:
    return output.strip().splitlines()[-1].split()[-1]


def authenticates(key: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client.get("/api/v1/threads").status_code == 200


def test_create_tenant_prints_a_working_key_last(db):
    key = last_word(run("create_tenant", "initech"))

    tenant = Tenant.objects.get(name="initech")
    api_key = ApiKey.objects.get(tenant=tenant)
    assert key.startswith(api_key.prefix + ".")
    assert api_key.scopes == []
    assert authenticates(key)


def test_create_tenant_with_the_export_scope(db):
    key = last_word(run("create_tenant", "initech", "--scope", "export"))

    api_key = ApiKey.objects.get_from_key(key)
    assert api_key.scopes == ["export"]
    assert api_key.has_scope("export")


def test_create_api_key_for_an_existing_tenant(acme):
    output = run("create_api_key", "acme", "--scope", "export", "--name", "compliance")
    key = last_word(output)

    api_key = ApiKey.objects.get_from_key(key)
    assert api_key.tenant == acme.tenant
    assert api_key.name == "compliance"
    assert api_key.scopes == ["export"]
    assert key not in output.strip().splitlines()[0]
    assert authenticates(key)
    assert authenticates(acme.key)


def test_create_api_key_without_scopes(acme):
    key = last_word(run("create_api_key", "acme"))

    assert ApiKey.objects.get_from_key(key).scopes == []


def test_create_api_key_for_an_unknown_tenant_fails(db):
    with pytest.raises(CommandError, match="No tenant named 'nobody'"):
        run("create_api_key", "nobody")

    assert not ApiKey.objects.exists()


def test_create_tenant_twice_fails(acme):
    with pytest.raises(CommandError):
        run("create_tenant", "acme")

    assert Tenant.objects.filter(name="acme").count() == 1
    assert ApiKey.objects.filter(tenant__name="acme").count() == 1


def test_create_tenant_rejects_a_name_that_is_not_a_slug(db):
    with pytest.raises(CommandError):
        run("create_tenant", "not a slug")

    assert not Tenant.objects.exists()


def test_unknown_scopes_are_refused(acme):
    with pytest.raises(CommandError, match="invalid choice"):
        run("create_api_key", "acme", "--scope", "admin")
    with pytest.raises(CommandError, match="invalid choice"):
        run("create_tenant", "initech", "--scope", "admin")

    assert ApiKey.objects.count() == 1
    assert not Tenant.objects.filter(name="initech").exists()
