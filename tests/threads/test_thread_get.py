"""``threads.selectors.thread_get``, the read that starts nearly every API request (written SQL,
turned into instances as the ORM loads them): the same thread, with the same related rows."""

import threading

import pytest
from django.db import connection
from django.http import Http404
from django.utils import timezone

from convmem.models import ModelProfile
from tests.conftest import SYSTEM, make_thread
from threads import services
from threads.models import Thread
from threads.selectors import thread_get

RELATED = ("active_leaf", "profile", "system_prompt")


def assert_same_row(read, expected) -> None:
    assert type(read) is type(expected)
    for field in type(expected)._meta.concrete_fields:
        assert getattr(read, field.attname) == getattr(expected, field.attname), field.name
    assert (read._state.db, read._state.adding) == (expected._state.db, expected._state.adding)


def orm_read(thread: Thread) -> Thread:
    return Thread.objects.select_related(*RELATED).get(pk=thread.pk)


def test_a_thread_with_a_profile_and_a_system_prompt_reads_as_the_orm_reads_it(acme):
    profile = ModelProfile.objects.create(tenant=acme.tenant, name="small", is_default=True)
    thread = services.thread_create(
        tenant=acme.tenant,
        actor=SYSTEM,
        user_ref="user-1",
        metadata={"plan": "pro"},
        profile=profile,
        system="Answer briefly.",
    )
    services.message_append(thread=thread, actor=SYSTEM, role="user", content="Hello")

    read = thread_get(tenant=acme.tenant, public_id=thread.public_id)

    expected = orm_read(thread)
    assert_same_row(read, expected)
    for name in RELATED:
        assert Thread._meta.get_field(name).is_cached(read)
        assert_same_row(getattr(read, name), getattr(expected, name))
    assert read.tenant is acme.tenant
    assert read.system_prompt.text == "Answer briefly."


def test_a_thread_without_a_profile_or_prompt_has_them_as_none_and_read(
    acme, django_assert_num_queries
):
    thread = make_thread(acme.tenant, turns=2)

    read = thread_get(tenant=acme.tenant, public_id=thread.public_id)

    with django_assert_num_queries(0):
        assert read.profile is None
        assert read.system_prompt is None
        assert read.active_leaf.content == "turn 1"


def test_without_the_leaf_the_leaf_is_not_read(acme):
    thread = make_thread(acme.tenant, turns=2)

    read = thread_get(tenant=acme.tenant, public_id=thread.public_id, with_leaf=False)

    assert not Thread._meta.get_field("active_leaf").is_cached(read)
    assert_same_row(read, orm_read(thread))


def test_another_tenants_or_a_deleted_thread_is_a_404(acme, globex):
    thread = make_thread(acme.tenant)
    with pytest.raises(Http404):
        thread_get(tenant=globex.tenant, public_id=thread.public_id)
    Thread.objects.filter(pk=thread.pk).update(deleted_at=timezone.now())
    with pytest.raises(Http404):
        thread_get(tenant=acme.tenant, public_id=thread.public_id)


@pytest.mark.django_db(transaction=True)
def test_each_connection_reads_as_the_orm_reads(acme):
    """The columns' converters are looked up once per connection and model (they are bound to
    the connection): a second connection, in another thread, reads the same rows alike."""
    thread = make_thread(acme.tenant, turns=2)
    read_here = thread_get(tenant=acme.tenant, public_id=thread.public_id)
    read_there = []

    def read_in_another_thread() -> None:
        try:
            read_there.append(thread_get(tenant=acme.tenant, public_id=thread.public_id))
        finally:
            connection.close()

    worker = threading.Thread(target=read_in_another_thread)
    worker.start()
    worker.join()

    expected = orm_read(thread)
    for read in (read_here, *read_there):
        assert_same_row(read, expected)
        assert_same_row(read.active_leaf, expected.active_leaf)
    assert len(read_there) == 1
