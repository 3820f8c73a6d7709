"""``bench/respond_faults.py``, small: a few clients streaming answers while generation workers
and gunicorn workers are SIGKILLed; no answer lost, none stored twice.

The bench runs as its own process on this run's PostgreSQL server, in a database of its own
(``<test database>_kills``, dropped afterwards), with its own redis-server and chat server.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.faults.processes import ROOT, figure
from tests.support.worker import worker_database_url

pytestmark = [pytest.mark.faults, pytest.mark.postgres, pytest.mark.django_db]


def test_answers_survive_worker_and_web_kills(tmp_path: Path):
    figures = tmp_path / "figures.json"
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "CONVMEM_LOAD_DB": f"{connection.settings_dict['NAME']}_kills",
    }
    command = [
        sys.executable,
        "bench/respond_faults.py",
        "--clients",
        "3",
        "--duration",
        "20",
        "--worker-kill-every",
        "6",
        "--web-kill-every",
        "5",
        "--json",
        str(figures),
    ]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert figures.exists(), run.stdout[-4000:] + run.stderr[-4000:]
    result = json.loads(figures.read_text())
    figure("respond_kills", **{k: v for k, v in result.items() if k != "client_errors"})

    assert result["worker_kills"] >= 1
    assert result["web_kills"] >= 1
    assert result["turns_attempted"] > 0
    assert result["lost"] == 0, result["client_errors"]
    assert result["duplicated"] == 0
