"""A new Python process with the project's settings, for what one process cannot show."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def child_prints(script: str, **environment: str) -> str:
    """What a new Python process running ``script`` with the project's settings prints."""
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "convmem.settings", **environment}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
