"""A new Python process with the project's settings, for what one process cannot show."""

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Put before a script that uses the ORM or the apps (``python -c`` sets nothing up).
DJANGO_SETUP = "import django\ndjango.setup()\n"


def run_child(script: str, environment: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a new Python process with the project's settings and ``environment``
    over this process's; what it printed and how it ended, for a test that looks at both."""
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "convmem.settings", **environment},
        capture_output=True,
        text=True,
        timeout=120,
    )


def child_prints(script: str, **environment: str) -> str:
    """What a new Python process running ``script`` with the project's settings prints; the
    test fails with its error output if it fails."""
    done = run_child(script, environment)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
