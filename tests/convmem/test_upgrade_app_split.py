"""``manage.py upgrade_app_split`` on a database as the last release before the app split left it.

``tests/fixtures/pre_split.*.sql`` were made by that release's own code (commit 6ca9bad:
``migrate``, ``seed_demo``, then a context with a system prompt and retrieved text, and an answer
linked to it, with usage, on a thread whose profile has prices; a memo with writer tokens).
Here, in a scratch database restored from them: ``migrate`` refuses until the upgrade has run,
then applies what came after the split (stored costs, priced once); every row is there, the
schema is the one a fresh ``migrate`` makes, the staff groups keep their permissions, and the
current code works on the old data.
"""

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
OLD_COUNTS = {
    "threads": "threads_thread",
    "messages": "threads_message",
    "events": "audit_auditevent",
    "assemblies": "audit_assemblyrecord",
    "blobs": "audit_contentblob",
    "memos": "compaction_summary",
    "profiles": "compaction_modelprofile",
    "deletion_requests": "audit_deletionrequest",
}

# Printed as JSON by ``manage.py shell`` in the upgraded database.
INSPECT = """
import json
from django.contrib.auth.models import Group
from django.db import connection
from auditlog.events import Actor
from auditlog.models import AuditEvent
from audit.models import DeletionRequest
from compaction.context import context_assemble
from compaction.models import AssemblyRecord, ContentBlob, Summary
from compaction.replay import assembly_replay
from convmem.models import ModelProfile
from threads.models import Message, Thread

counts = {
    "threads": Thread.objects.count(),
    "messages": Message.objects.count(),
    "events": AuditEvent.objects.count(),
    "assemblies": AssemblyRecord.objects.count(),
    "blobs": ContentBlob.objects.count(),
    "memos": Summary.objects.count(),
    "profiles": ModelProfile.objects.count(),
    "deletion_requests": DeletionRequest.objects.count(),
}
answer = Message.objects.get(content="Answered before the split.")
record = AssemblyRecord.objects.get(public_id=answer.assembly_public_id)
fresh = context_assemble(
    thread=answer.thread, actor=Actor.system("upgrade-test"), window_tokens=4096, reserve_tokens=256
)
perms = {
    group.name: sorted(f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all())
    for group in Group.objects.all()
}
memo = Summary.objects.get(prompt_tokens__gt=0)
print(json.dumps({
    "counts": counts,
    "answer_cost": str(answer.cost),
    "memo_cost": str(memo.cost),
    "answer_assembly_thread": record.thread_id == answer.thread_id,
    "replay_matches": assembly_replay(assembly=record).matches,
    "new_context_items": len(fresh.record.items),
    "perms": perms,
}))
"""

# The schema as Django sees it: per table, columns (with nullability), foreign keys, unique
# constraints and indexed column sets; names of constraints and indexes aside.
SCHEMA = """
import json
from django.db import connection

schema = {}
with connection.cursor() as cursor:
    for table in sorted(connection.introspection.table_names()):
        columns = connection.introspection.get_table_description(cursor, table)
        constraints = connection.introspection.get_constraints(cursor, table).values()
        schema[table] = {
            "columns": sorted([c.name, bool(c.null_ok)] for c in columns),
            "foreign_keys": sorted(
                [c["columns"][0], c["foreign_key"][0]] for c in constraints if c["foreign_key"]
            ),
            "unique": sorted(
                c["columns"] for c in constraints if c["unique"] and not c["primary_key"]
            ),
            "indexes": sorted(c["columns"] for c in constraints if c["index"] and not c["unique"]),
        }
print(json.dumps(schema))
"""


def manage(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def shell_json(url: str, script: str) -> dict:
    result = manage(url, "shell", "-c", script)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


class SqliteScratch:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def restore(self, name: str) -> str:
        path = self.directory / f"{name}.sqlite3"
        db = sqlite3.connect(path)
        db.executescript((FIXTURES / "pre_split.sqlite.sql").read_text())
        db.close()
        return f"sqlite:///{path}"

    def empty(self, name: str) -> str:
        return f"sqlite:///{self.directory / name}.sqlite3"

    def count(self, url: str, table: str) -> int:
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        finally:
            db.close()


class PostgresScratch:
    """Scratch databases beside the test database, on the same server; dropped afterwards."""

    def __init__(self) -> None:
        settings = connection.settings_dict
        self.server = {
            "host": settings["HOST"] or "127.0.0.1",
            "port": settings["PORT"] or 5432,
            "user": settings["USER"],
            "password": settings["PASSWORD"] or None,
        }
        self.made: list[str] = []

    def _admin(self) -> psycopg.Connection:
        return psycopg.connect(dbname="postgres", autocommit=True, **self.server)

    def empty(self, name: str) -> str:
        dbname = f"convmem_upgrade_{name}_{os.getpid()}"
        with self._admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}"')
            admin.execute(f'CREATE DATABASE "{dbname}"')
        self.made.append(dbname)
        server = self.server
        return f"postgres://{server['user']}@{server['host']}:{server['port']}/{dbname}"

    def restore(self, name: str) -> str:
        url = self.empty(name)
        with psycopg.connect(url, autocommit=True) as db:
            db.execute((FIXTURES / "pre_split.postgresql.sql").read_text())
        return url

    def count(self, url: str, table: str) -> int:
        with psycopg.connect(url) as db:
            return db.execute(f'SELECT count(*) FROM public."{table}"').fetchone()[0]

    def drop_all(self) -> None:
        with self._admin() as admin:
            for dbname in self.made:
                admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def scratch(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    if request.param == "sqlite":
        yield SqliteScratch(tmp_path)
        return
    databases = PostgresScratch()
    try:
        yield databases
    finally:
        databases.drop_all()


def test_migrate_refuses_a_pre_split_database_until_it_is_upgraded(scratch):
    url = scratch.restore("old")

    refused = manage(url, "migrate")

    assert refused.returncode != 0
    assert "convmem.E001" in refused.stderr
    assert "upgrade_app_split" in refused.stderr
    upgraded = manage(url, "upgrade_app_split")
    assert upgraded.returncode == 0, upgraded.stderr
    migrated = manage(url, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert "Applying threads.0002_cost... OK" in migrated.stdout
    assert "No migrations to apply." in manage(url, "migrate").stdout
    again = manage(url, "upgrade_app_split")
    assert "nothing to do" in again.stdout


def test_every_row_survives_and_the_current_code_works_on_it(scratch):
    url = scratch.restore("old")
    before = {name: scratch.count(url, table) for name, table in OLD_COUNTS.items()}
    assert before["blobs"] == 2  # the fixture has what the upgrade must carry across

    assert manage(url, "upgrade_app_split").returncode == 0
    assert manage(url, "migrate").returncode == 0
    after = shell_json(url, INSPECT)

    assert after["counts"] == before
    # Priced once, at the profile's prices (2 and 10 per million): (1000*2 + 200*10) / 1e6 and
    # (3000*2 + 400*10) / 1e6.
    assert Decimal(after["answer_cost"]) == Decimal("0.004")
    assert Decimal(after["memo_cost"]) == Decimal("0.01")
    assert after["answer_assembly_thread"] is True
    assert after["replay_matches"] is True
    assert after["new_context_items"] > 0
    compliance = set(after["perms"]["Compliance"])
    assert {
        "auditlog.view_auditevent",
        "compaction.view_assemblyrecord",
        "compaction.view_contentblob",
        "audit.export_history",
        "audit.approve_deletionrequest",
    } <= compliance
    assert "compaction.view_assemblyrecord" in after["perms"]["Support"]


def test_the_upgraded_schema_is_what_a_fresh_migrate_makes(scratch):
    old = scratch.restore("old")
    fresh = scratch.empty("fresh")
    assert manage(old, "upgrade_app_split").returncode == 0
    assert manage(old, "migrate").returncode == 0
    assert manage(fresh, "migrate").returncode == 0

    assert shell_json(old, SCHEMA) == shell_json(fresh, SCHEMA)
