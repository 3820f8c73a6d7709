"""``python3 dev.py serve [PORT]`` as a newcomer runs it: a real process with its own SQLite and
filesystem broker (a fresh var dir). The web and worker logs go to files, and the summary (API,
key, logins, demo thread) comes after the worker is ready, so it is what stays on screen; a
second run prints the same logins and key."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.faults.processes import free_port

pytestmark = pytest.mark.worker

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 240.0


class Serve:
    """A running ``dev.py serve`` and the lines it has printed so far."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "dev.py", "serve", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_summary(self) -> list[str]:
        """Lines up to the summary's last one (the API key)."""
        deadline = time.monotonic() + START_TIMEOUT
        while not any(" API key: " in line for line in self.lines):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("\n".join(self.lines[-60:]))
            time.sleep(0.2)
        end = next(i for i, line in enumerate(self.lines) if " API key: " in line)
        return self.lines[: end + 1]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@contextmanager
def serve(var_dir: Path, args: list[str], **env: str) -> Iterator[Serve]:
    # The embedded defaults, as after a checkout: no DATABASE_URL / REDIS_URL of the test run.
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "CONVMEM_KEYS_DATABASE_URL", "PORT"}
    }
    running = Serve(args, {**base, "CONVMEM_VAR_DIR": str(var_dir), **env})
    try:
        yield running
    finally:
        running.stop()


def index_of(lines: list[str], text: str) -> int:
    return next(i for i, line in enumerate(lines) if text in line)


def summary_of(lines: list[str]) -> dict[str, str]:
    start = index_of(lines, "convmem is running")
    summary = lines[start:]
    return {
        "key": summary[-1].split()[-1],
        "logins": "\n".join(line for line in summary if " login: " in line),
        "thread": re.search(r"Demo thread: (thr_\w+)", "\n".join(summary)).group(1),
    }


def admin_login_works(base: str, logins: str) -> bool:
    password = re.search(r"Admin login: admin / (\S+)", logins).group(1)
    session = requests.Session()
    session.get(f"{base}/admin/login/", timeout=10)
    r = session.post(
        f"{base}/admin/login/",
        data={
            "username": "admin",
            "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
            "next": "/admin/",
        },
        allow_redirects=False,
        timeout=10,
    )
    return r.status_code == 302 and r.headers["Location"] == "/admin/"


def test_serve_prints_the_summary_last_and_the_same_logins_every_run(tmp_path):
    port = free_port()
    with serve(tmp_path, [str(port)]) as first:
        lines = first.wait_for_summary()
        base = f"http://127.0.0.1:{port}"
        summary = summary_of(lines)
        threads = requests.get(
            f"{base}/api/v1/threads",
            headers={"Authorization": f"Bearer {summary['key']}"},
            timeout=10,
        )
        login_ok = admin_login_works(base, summary["logins"])
        landing = requests.get(f"{base}/", timeout=10)
        on_screen = list(first.lines)

    # The start-up output goes to the log files; the screen ends with the summary.
    assert " ready." in (tmp_path / "log" / "worker.log").read_text()
    assert f"Starting development server at {base}/" in (tmp_path / "log" / "web.log").read_text()
    assert [line for line in on_screen if line.strip()][-1] == lines[-1]
    assert "New demo API key (first run)." in lines
    # The known-harmless warnings are silenced where they come from.
    log_dir = tmp_path / "log"
    logs = "\n".join(
        [*on_screen, (log_dir / "worker.log").read_text(), (log_dir / "web.log").read_text()]
    )
    assert "No hostname was supplied" not in logs
    assert "superuser privileges" not in logs
    assert landing.status_code == 200
    assert 'href="/admin/"' in landing.text
    assert 'href="/api/v1/docs/"' in landing.text
    assert threads.status_code == 200
    assert summary["thread"] in {t["id"] for t in threads.json()["results"]}
    assert login_ok

    other_port = free_port()
    with serve(tmp_path, [], PORT=str(other_port)) as second:
        again = second.wait_for_summary()
        answered = requests.get(f"http://127.0.0.1:{other_port}/api/v1/", timeout=10)

    assert answered.status_code == 200
    assert summary_of(again) == summary
    assert not any(line.startswith("New demo API key") for line in again)


@pytest.mark.parametrize("args", [["http"], ["0"], ["70000"], ["8000", "8001"]])
def test_serve_refuses_a_bad_port(args):
    result = subprocess.run(
        [sys.executable, "dev.py", "serve", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert result.returncode == 2
    assert "dev.py serve [PORT]" in result.stdout
