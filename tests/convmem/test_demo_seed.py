"""The demo seed behind ``dev.py serve`` is idempotent: what exists is left alone (no password
reset, no extra key), and the secrets are kept in the var dir so every run prints the same
logins. A revoked key, or a lost credentials file, gets a new key, and the seed says so."""

import json
import stat
from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command

from convmem.demo import demo_credentials_path, demo_seed
from convmem.models import ApiKey, Tenant
from convmem.tenancy import api_key_revoke
from threads.models import Message, Thread


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def key_works(key: str) -> bool:
    try:
        return ApiKey.objects.get_from_key(key).tenant.name == "demo"
    except ApiKey.DoesNotExist:
        return False


def test_the_first_seed_creates_the_demo_and_keeps_its_secrets(db):
    seeded = demo_seed()

    assert seeded.key.minted_because == "first run"
    assert key_works(seeded.key.key)
    assert [(login.username, login.created) for login in seeded.logins] == [
        ("admin", True),
        ("support", True),
        ("compliance", True),
    ]
    for login in seeded.logins:
        assert authenticate(username=login.username, password=login.password) is not None
    assert list(User.objects.get(username="support").groups.values_list("name", flat=True)) == [
        "Support"
    ]
    assert User.objects.get(username="admin").is_superuser
    path = demo_credentials_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {
        "api_key": seeded.key.key,
        "passwords": {login.username: login.password for login in seeded.logins},
    }


def test_seeding_again_changes_nothing(db):
    first = demo_seed()
    hashes = dict(User.objects.values_list("username", "password"))
    rows = (ApiKey.objects.count(), Thread.objects.count(), Message.objects.count())

    again = demo_seed()

    assert again.key.key == first.key.key
    assert again.key.minted_because == ""
    assert [(login.password, login.created) for login in again.logins] == [
        (login.password, False) for login in first.logins
    ]
    assert dict(User.objects.values_list("username", "password")) == hashes
    assert (ApiKey.objects.count(), Thread.objects.count(), Message.objects.count()) == rows
    assert again.thread == first.thread
    assert again.deletion == first.deletion


def test_a_revoked_key_is_replaced_and_the_seed_says_so(db):
    first = demo_seed()
    api_key_revoke(api_key=ApiKey.objects.get_from_key(first.key.key))

    again = demo_seed()

    assert again.key.key != first.key.key
    assert "revoked" in again.key.minted_because
    assert key_works(again.key.key)
    assert not key_works(first.key.key)
    assert json.loads(demo_credentials_path().read_text())["api_key"] == again.key.key
    assert Tenant.objects.get(name="demo").api_keys.count() == 2


def test_a_lost_credentials_file_mints_a_key_but_resets_no_password(db):
    first = demo_seed()
    demo_credentials_path().unlink()

    again = demo_seed()

    assert again.key.key != first.key.key
    assert "no key in demo-credentials.json" in again.key.minted_because
    assert [login.password for login in again.logins] == [None, None, None]
    for login in first.logins:
        assert authenticate(username=login.username, password=login.password) is not None


def test_a_changed_password_is_neither_reset_nor_shown(db):
    first = demo_seed()
    support = User.objects.get(username="support")
    support.set_password("chosen-by-the-user-1")
    support.save(update_fields=["password"])

    again = demo_seed()

    shown = {login.username: login.password for login in again.logins}
    assert shown["support"] is None
    assert shown["admin"] == first.logins[0].password
    assert authenticate(username="support", password="chosen-by-the-user-1") is not None


def test_the_command_prints_the_same_logins_each_run_with_the_key_last(db):
    outputs = []
    for _ in range(2):
        out = StringIO()
        call_command("seed_demo", stdout=out)
        outputs.append(out.getvalue().splitlines())

    first, second = outputs
    key = first[-1].split()[-1]
    assert key_works(key)
    assert second[-1].split()[-1] == key
    assert "New demo API key (first run)." in first
    assert not any(line.startswith("New demo API key") for line in second)
    logins = [line for line in first if " login: " in line]
    assert len(logins) == 3
    assert logins == [line for line in second if " login: " in line]
