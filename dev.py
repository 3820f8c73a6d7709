#!/usr/bin/env python3
"""Set-up and run convmem with nothing but Python (3.11, 3.12 or 3.13).

    python3 dev.py serve [PORT]   # install, migrate, seed a demo, run web + a real Celery worker
    python3 dev.py test           # install, run the whole test suite (extra args go to pytest)

Both create a virtualenv on first use (``.venv`` for Python 3.11, ``.venv-3.12`` / ``.venv-3.13``
for the others, so versions never share one) and reinstall only when a pyproject.toml changes
(the server's, or the Python client's in ``clients/python``). ``serve`` listens on PORT
(default: the PORT environment variable, else 8000) and writes the web and worker logs to
``var/log/``. ``test`` keeps its databases and broker under ``var/test/`` (``CONVMEM_VAR_DIR``),
so it runs beside a ``serve`` without touching it.
"""

import hashlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SUPPORTED = ((3, 11), (3, 12), (3, 13))
START_TIMEOUT = 120.0
PYPROJECTS = ("pyproject.toml", "clients/python/pyproject.toml")


def venv_dir(version: tuple[int, int] | None = None) -> Path:
    """The virtualenv of a Python version: ``.venv`` for 3.11 (the reference), else
    ``.venv-3.N`` (packages built for one version do not run on another)."""
    major, minor = version or sys.version_info[:2]
    return ROOT / (".venv" if (major, minor) == (3, 11) else f".venv-{major}.{minor}")


VENV = venv_dir()
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".convmem-installed"


def ensure_environment() -> None:
    if sys.version_info[:2] not in SUPPORTED:
        versions = ", ".join(f"{major}.{minor}" for major, minor in SUPPORTED)
        sys.exit(f"convmem needs Python {versions} (this is {sys.version.split()[0]}).")
    if not PYTHON.exists():
        print(f"Creating {VENV.name} …", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256(b"".join((ROOT / name).read_bytes() for name in PYPROJECTS)).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    print(f"Installing convmem and its dependencies into {VENV.name} …", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    # setuptools warns on every editable install of a flat layout ("be careful with folders in
    # your working directory…"): informational only, and this layout is deliberate.
    quiet = {**os.environ, "PYTHONWARNINGS": "ignore"}
    subprocess.run([*pip, "--upgrade", "pip"], check=True, env=quiet)
    subprocess.run([*pip, "-e", f"{ROOT}[dev]"], check=True, env=quiet)
    # The Python client (its own package; the tests and the README tour use it).
    subprocess.run([*pip, "-e", str(ROOT / "clients" / "python")], check=True, env=quiet)
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


def var_dir() -> Path:
    return Path(os.environ.get("CONVMEM_VAR_DIR", ROOT / "var"))


class Process:
    """A child process writing its output (stdout and stderr) to a log file."""

    def __init__(self, command: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._file = log.open("a", encoding="utf-8")
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=self._file,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def running(self) -> bool:
        return self.process.poll() is None

    def printed(self, marker: str, since: int) -> bool:
        with self.log.open("rb") as file:
            file.seek(since)
            return marker.encode() in file.read()

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.running():
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._file.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_until_started(worker: Process, worker_offset: int, web: Process, api_url: str) -> bool:
    """Wait for the worker to be ready and the API to answer; False if either died first."""
    deadline = time.monotonic() + START_TIMEOUT
    while not (worker.printed(" ready.", worker_offset) and _answers(api_url)):
        if not (worker.running() and web.running()) or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(port: str) -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # A demo database from before the December 2026 app split is upgraded in place first.
    manage("upgrade_app_split", "--verbosity", "0")
    manage("migrate", "--noinput", "--verbosity", "0")
    # The data keys' own database (docs/erasure.md, "Per-subject keys").
    manage("migrate", "--noinput", "--database", "keys", "--verbosity", "0")
    summary = manage("seed_demo", capture=True)
    logs = var_dir() / "log"
    worker_log = logs / "worker.log"
    worker_offset = worker_log.stat().st_size if worker_log.exists() else 0
    worker = Process(
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
            "memos,bulk,erasure,generation,webhooks,celery",
            "--loglevel=INFO",
            "--concurrency=2",
        ],
        worker_log,
        # Running as root (containers, CI) makes Celery warn on every worker start; the dev
        # server is the one place where that is expected (convmem/celery.py silences it).
        env={"CONVMEM_DEV_SERVER": "1"},
    )
    web = Process(
        [str(PYTHON), "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        logs / "web.log",
    )
    base = f"http://127.0.0.1:{port}"
    print(f"Starting the web server and a Celery worker (logs in {logs}) …", flush=True)
    try:
        if not wait_until_started(worker, worker_offset, web, f"{base}/api/v1/"):
            for process in (web, worker):
                print(f"\n--- {process.log} (last lines)\n{process.tail()}", flush=True)
            print("\nconvmem did not start (see the logs above).", flush=True)
            return 1
        # Everything else goes to the log files, so this stays on screen.
        print(
            f"\nconvmem is running: {base}/ — API {base}/api/v1/ (docs /api/v1/docs/), "
            f"admin {base}/admin/.\nLogs: {web.log}, {worker.log}. Ctrl-C stops it.\n\n"
            f"{summary}",
            flush=True,
        )
        while web.running() and worker.running():
            time.sleep(0.5)
        for process in (web, worker):
            if not process.running():
                print(f"\n{process.log} ended:\n{process.tail()}", flush=True)
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
    """Run pytest with its own var dir (SQLite files, filesystem broker, worker logs) under
    ``var/test``: a ``serve`` running beside it keeps its database and its queue."""
    env = {**os.environ}
    env.setdefault("CONVMEM_VAR_DIR", str(ROOT / "var" / "test"))
    return subprocess.call([str(PYTHON), "-m", "pytest", *args], cwd=ROOT, env=env)


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
