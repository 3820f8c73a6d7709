"""``dev.py serve`` on a demo database from before the app split (its migrations cannot apply):
the old file is kept aside, with its WAL, and a fresh one is made; a current one is left alone."""

import sqlite3
from pathlib import Path

import pytest

import dev


def demo_db(path: Path, table: str) -> None:
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE {table} (id INTEGER)")
    db.commit()
    db.close()


@pytest.fixture
def var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(dev, "DEMO_DB", tmp_path / "convmem.sqlite3")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return tmp_path


def test_a_pre_split_demo_database_is_kept_aside(var: Path, capsys):
    demo_db(var / "convmem.sqlite3", "audit_auditevent")
    (var / "convmem.sqlite3-wal").write_bytes(b"")

    dev.set_aside_pre_split_demo_db()

    assert sorted(p.name for p in var.iterdir()) == [
        "convmem-before-app-split.sqlite3",
        "convmem-before-app-split.sqlite3-wal",
    ]
    assert "predates the app split" in capsys.readouterr().out


def test_a_current_demo_database_stays(var: Path):
    demo_db(var / "convmem.sqlite3", "auditlog_auditevent")

    dev.set_aside_pre_split_demo_db()

    assert [p.name for p in var.iterdir()] == ["convmem.sqlite3"]
