"""The test suite's flush gives way to a deadlock once and goes through (``tests/conftest.py``):
a real worker finishing a test's last task must not fail the next test's set-up."""

import pytest
from django.db import OperationalError, connection

from tests.conftest import FLUSH_ATTEMPTS

# Ends as a deadlock's victim would (SQLSTATE 40P01) until its sequence has passed ``fails``.
_FAILING_UNTIL = """
DO $$ BEGIN
  IF nextval('flush_attempts') <= {fails} THEN
    RAISE EXCEPTION 'deadlock detected' USING ERRCODE = 'deadlock_detected';
  END IF;
END $$
"""


@pytest.fixture
def attempts():
    with connection.cursor() as cursor:
        cursor.execute("CREATE SEQUENCE flush_attempts")
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP SEQUENCE flush_attempts")


def _attempts_made() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_value FROM flush_attempts")
        return cursor.fetchone()[0]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_flush_ended_by_a_deadlock_is_tried_again(attempts):
    connection.ops.execute_sql_flush([_FAILING_UNTIL.format(fails=FLUSH_ATTEMPTS - 1)])
    assert _attempts_made() == FLUSH_ATTEMPTS


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_flush_that_keeps_deadlocking_fails(attempts):
    with pytest.raises(OperationalError, match="deadlock detected"):
        connection.ops.execute_sql_flush([_FAILING_UNTIL.format(fails=FLUSH_ATTEMPTS)])
    assert _attempts_made() == FLUSH_ATTEMPTS
