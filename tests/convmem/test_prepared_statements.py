"""On PostgreSQL a statement a connection runs again and again is prepared (planned once):
Django turns psycopg's preparing off unless ``prepare_threshold`` is given."""

import pytest
from django.conf import settings
from django.db import connection

from convmem.tenancy import tenant_create
from threads.models import Thread

THRESHOLD = settings.DATABASES["default"].get("OPTIONS", {}).get("prepare_threshold")


def _prepared_on_thread_table() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%FROM "threads_thread"%'],
        )
        return cursor.fetchone()[0]


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_statement_run_past_the_threshold_is_prepared():
    assert THRESHOLD == 5
    tenant, _, _ = tenant_create(name="prepared")
    thread = Thread.objects.create(tenant=tenant, user_ref="u")
    before = _prepared_on_thread_table()
    for _ in range(THRESHOLD + 1):
        assert Thread.objects.filter(pk=thread.pk).exists()
    assert _prepared_on_thread_table() == before + 1
