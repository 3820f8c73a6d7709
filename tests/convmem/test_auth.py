"""Bearer API-key authentication: keys are hashed, revocable, expiring, and name one tenant."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from convmem.models import ApiKey
from convmem.tenancy import api_key_create, api_key_revoke
from tests.conftest import make_thread
from tests.threads.helpers import Rows, error_of, messages_url, post


def client_with(authorization: str | None) -> APIClient:
    client = APIClient()
    if authorization is not None:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    return client


def test_a_valid_key_acts_for_its_tenant(acme):
    r = acme.client.get("/api/v1/threads")

    assert r.status_code == 200


def test_keys_are_stored_hashed(acme):
    stored = ApiKey.objects.get(pk=acme.api_key.pk)

    assert acme.key.startswith(stored.prefix + ".")
    assert acme.key not in stored.hashed_key
    assert acme.key.split(".", 1)[1] not in stored.hashed_key


def test_no_authorization_is_401_with_a_challenge(db):
    r = client_with(None).get("/api/v1/threads")

    assert error_of(r) == (401, "not_authenticated")
    assert r["WWW-Authenticate"] == 'Bearer realm="convmem"'


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param("Bearer nope", id="unknown"),
        pytest.param("Bearer abcdefgh.wrongsecret", id="malformed-secret"),
        pytest.param("Bearer", id="no-key"),
        pytest.param("Bearer a b", id="two-words"),
    ],
)
def test_a_wrong_key_is_401(acme, authorization):
    r = client_with(authorization).get("/api/v1/threads")

    assert error_of(r) == (401, "invalid_api_key")


def test_the_right_prefix_with_a_wrong_secret_is_401(acme):
    prefix = acme.key.split(".", 1)[0]

    r = client_with(f"Bearer {prefix}.notthesecret").get("/api/v1/threads")

    assert error_of(r) == (401, "invalid_api_key")


@pytest.mark.parametrize("scheme", ["Token ", "Api-Key ", ""])
def test_another_scheme_is_401_saying_what_is_expected(acme, scheme):
    r = client_with(f"{scheme}{acme.key}").get("/api/v1/threads")

    assert error_of(r) == (401, "not_authenticated")
    assert r.json()["detail"] == "Authorization header must be 'Bearer <api key>'."
    assert r["WWW-Authenticate"] == 'Bearer realm="convmem"'
    assert acme.key.split(".", 1)[1] not in r.content.decode()


def test_the_scheme_is_case_insensitive(acme):
    assert client_with(f"bearer {acme.key}").get("/api/v1/threads").status_code == 200


def test_a_revoked_key_is_401(acme):
    api_key_revoke(api_key=acme.api_key)

    r = acme.client.get("/api/v1/threads")

    assert error_of(r) == (401, "invalid_api_key")


def test_an_expired_key_is_401_and_a_future_expiry_is_fine(acme):
    ApiKey.objects.filter(pk=acme.api_key.pk).update(expiry_date=timezone.now() + timedelta(days=1))
    assert acme.client.get("/api/v1/threads").status_code == 200

    ApiKey.objects.filter(pk=acme.api_key.pk).update(
        expiry_date=timezone.now() - timedelta(seconds=1)
    )
    assert error_of(acme.client.get("/api/v1/threads")) == (401, "invalid_api_key")


def test_rejected_writes_leave_nothing(acme):
    thread = make_thread(acme.tenant)
    api_key_revoke(api_key=acme.api_key)
    before = Rows.now()

    revoked = post(
        acme.client, messages_url(thread.public_id), {"role": "user", "content": "x"}, "k"
    )
    anonymous = post(
        client_with(None), messages_url(thread.public_id), {"role": "user", "content": "x"}, "k"
    )
    created = post(client_with("Bearer nope"), "/api/v1/threads", {"user_ref": "u"}, "k")

    assert error_of(revoked) == (401, "invalid_api_key")
    assert error_of(anonymous) == (401, "not_authenticated")
    assert error_of(created) == (401, "invalid_api_key")
    assert Rows.now() == before


def test_every_key_of_a_tenant_sees_the_same_threads(acme):
    thread = make_thread(acme.tenant)
    _, key = api_key_create(tenant=acme.tenant, name="second")

    r = client_with(f"Bearer {key}").get(f"/api/v1/threads/{thread.public_id}")

    assert r.status_code == 200


def test_revoking_one_key_leaves_the_others_working(acme):
    second, key = api_key_create(tenant=acme.tenant, name="second")

    api_key_revoke(api_key=second)

    assert acme.client.get("/api/v1/threads").status_code == 200
    assert client_with(f"Bearer {key}").get("/api/v1/threads").status_code == 401


def test_schema_is_public(db):
    r = client_with(None).get("/api/v1/schema/")

    assert r.status_code == 200


def test_a_key_with_control_characters_is_401(acme):
    prefix = acme.key.split(".", 1)[0]

    r = client_with(f"Bearer {prefix}\x00.secret").get("/api/v1/threads")

    assert error_of(r) == (401, "invalid_api_key")


def test_another_scheme_leaves_an_open_endpoint_open(db):
    """A header the API does not take (a proxy's Basic credentials) keeps the index readable."""
    r = client_with("Basic dXNlcjpwYXNz").get("/api/v1/")

    assert r.status_code == 200
