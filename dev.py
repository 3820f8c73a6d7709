#!/usr/bin/env python3
"""Set-up and run convmem with nothing but Python 3.11.

    python3 dev.py serve [PORT]   # install, migrate, seed a demo, run web + a real Celery worker
    python3 dev.py test           # install, run the whole test suite (extra args go to pytest)

Both create ``.venv`` on first use and reinstall only when a pyproject.toml changes (the
server's, or the Python client's in ``clients/python``). ``serve`` listens on PORT (default:
the PORT environment variable, else 8000).
"""

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".convmem-installed"
START_TIMEOUT = 120.0
# Start-up output (the worker's banner, beat, the demo's memo task) counts as over once both
# processes have been silent this long, or this long after they started answering.
QUIET_SECONDS = 1.5
QUIET_MAX_SECONDS = 15.0
PYPROJECTS = ("pyproject.toml", "clients/python/pyproject.toml")


def ensure_environment() -> None:
    if sys.version_info[:2] != (3, 11):
        sys.exit(f"convmem needs Python 3.11 (this is {sys.version.split()[0]}).")
    if not PYTHON.exists():
        print("Creating .venv …", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256(b"".join((ROOT / name).read_bytes() for name in PYPROJECTS)).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    print("Installing convmem and its dependencies into .venv …", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f"{ROOT}[dev]"], check=True)
    # The Python client (its own package; the tests and the README tour use it).
    subprocess.run([*pip, "-e", str(ROOT / "clients" / "python")], check=True)
    STAMP.write_text(wanted)


def manage(*args: str, capture: bool = False) -> str:
    result = subprocess.run(
        [str(PYTHON), "manage.py", *args],
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE if capture else None,
        text=True,
    )
    return result.stdout or ""


class Relay:
    """Run a child process, copying its output (stdout and stderr) to ours line by line, and
    remember when it last printed and whether it has printed ``marker``."""

    _lock = threading.Lock()

    def __init__(self, command: list[str], marker: str | None = None) -> None:
        self.marker = marker
        self.seen_marker = marker is None
        self.last_output = time.monotonic()
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._copy, daemon=True).start()

    def _copy(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._lock:
                sys.stdout.write(line)
                sys.stdout.flush()
            self.last_output = time.monotonic()
            if self.marker and self.marker in line:
                self.seen_marker = True

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.running():
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_until_started(worker: Relay, web: Relay, api_url: str) -> bool:
    """Wait for the worker to be ready and the API to answer, then for the start-up output to
    settle, so what is printed next is the last thing on screen. False if either died."""
    deadline = time.monotonic() + START_TIMEOUT
    while not (worker.seen_marker and _answers(api_url)):
        if not (worker.running() and web.running()) or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    settle_until = time.monotonic() + QUIET_MAX_SECONDS
    while time.monotonic() < settle_until:
        if time.monotonic() - max(worker.last_output, web.last_output) >= QUIET_SECONDS:
            break
        time.sleep(0.1)
    return worker.running() and web.running()


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(port: str) -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # A demo database from before the December 2026 app split is upgraded in place first.
    manage("upgrade_app_split", "--verbosity", "0")
    manage("migrate", "--noinput")
    # Printed once everything runs: the worker's banner would scroll it away.
    summary = manage("seed_demo", capture=True)
    worker = Relay(
        [
            str(PYTHON),
            "-m",
            "celery",
            "-A",
            "convmem",
            "worker",
            "-B",
            # Every queue (convmem.settings.CELERY_QUEUE_NAMES): one worker does all the work.
            "--queues",
            "memos,bulk,erasure,celery",
            "--loglevel=INFO",
            "--concurrency=2",
        ],
        marker=" ready.",
    )
    web = Relay([str(PYTHON), "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"])
    base = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_started(worker, web, f"{base}/api/v1/"):
            print("\nconvmem did not start (see the output above).", flush=True)
            return 1
        print(
            f"\nconvmem is running: API {base}/api/v1/ (docs /api/v1/docs/), "
            f"admin {base}/admin/. Ctrl-C stops it.\n\n{summary}",
            flush=True,
        )
        while web.running() and worker.running():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        web.stop()
        worker.stop()
    return 0


def port_argument(args: list[str]) -> str | None:
    """PORT from ``serve [PORT]``, else the PORT environment variable, else 8000; None if bad."""
    port = args[0] if args else os.environ.get("PORT", "8000")
    if len(args) > 1 or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return port


def test(args: list[str]) -> int:
    return subprocess.call([str(PYTHON), "-m", "pytest", *args], cwd=ROOT)


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in {"serve", "test"}:
        print(__doc__)
        return 2
    os.chdir(ROOT)
    if sys.argv[1] == "serve":
        port = port_argument(sys.argv[2:])
        if port is None:
            print(__doc__)
            return 2
        ensure_environment()
        return serve(port)
    ensure_environment()
    return test(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
