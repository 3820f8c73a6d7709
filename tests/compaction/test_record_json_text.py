"""A record's items, plan, budget and token counts are stored as compact text on both
databases (``convmem.compact_json.CompactJSONField``: ``json``, not ``jsonb``, on PostgreSQL),
and read back as written (issue 24, stored bytes)."""

import pytest
from django.db import connection

from compaction.models import AssemblyRecord
from tests.compaction.helpers import grow, post_context
from tests.conftest import make_thread

FIELDS = ("items", "plan", "budget", "tokens")


def _stored_text(record: AssemblyRecord) -> list[str]:
    columns = ", ".join(f"CAST({field} AS TEXT)" for field in FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM compaction_assemblyrecord WHERE id = %s", [record.pk]
        )
        return list(cursor.fetchone())


def test_a_record_is_stored_compact_and_read_back_as_written(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 5)
    response = post_context(acme.client, thread, system="Be brief.")
    assert response.status_code == 200, response.data
    written = AssemblyRecord.objects.get(public_id=response.data["assembly_id"])

    texts = _stored_text(written)

    assert all(", " not in text and '": ' not in text for text in texts), texts
    read = AssemblyRecord.objects.values(*FIELDS).get(pk=written.pk)
    assert [read[field] for field in FIELDS] == [getattr(written, field) for field in FIELDS]
    assert written.tokens_shown() == response.data["tokens"]


@pytest.mark.postgres
def test_the_record_columns_are_json_on_postgresql(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'compaction_assemblyrecord' AND column_name = ANY(%s)",
            [list(FIELDS)],
        )
        assert dict(cursor.fetchall()) == dict.fromkeys(FIELDS, "json")
