"""The apps' layering holds: import-linter's contracts in pyproject.toml (apps import only the
apps below them; the convmem kernel imports no app; no app imports the memo evaluation), and
the migrations depend the same way."""

import subprocess
import sys
from pathlib import Path

from django.db.migrations.loader import MigrationLoader

ROOT = Path(__file__).resolve().parent.parent
BOTTOM_UP = ["convmem", "auditlog", "threads", "compaction", "usage", "respond", "audit", "imports"]


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 3 kept, 0 broken." in result.stdout


def test_migrations_depend_only_on_apps_below(db):
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    for app_label, _ in graph.nodes:
        if app_label not in BOTTOM_UP:
            continue
        below = set(BOTTOM_UP[: BOTTOM_UP.index(app_label) + 1])
        for node in graph.nodes:
            if node[0] != app_label:
                continue
            for dependency in graph.node_map[node].parents:
                other = dependency.key[0]
                assert other in below or other not in BOTTOM_UP, (node, dependency.key)
