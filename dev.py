#!/usr/bin/env python3
"""Set-up and run convmem with nothing but Python 3.11.

    python3 dev.py serve   # install, migrate, seed a demo, run web + a real Celery worker
    python3 dev.py test    # install, run the whole test suite (extra args go to pytest)

Both create ``.venv`` on first use and reinstall only when a pyproject.toml changes (the
server's, or the Python client's in ``clients/python``).
"""

import hashlib
import os
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".convmem-installed"
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


def manage(*args: str) -> None:
    subprocess.run([str(PYTHON), "manage.py", *args], cwd=ROOT, check=True)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve(port: str) -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    manage("migrate", "--noinput")
    manage("seed_demo")
    worker = subprocess.Popen(
        [
            str(PYTHON),
            "-m",
            "celery",
            "-A",
            "convmem",
            "worker",
            "-B",
            "--loglevel=INFO",
            "--concurrency=2",
        ],
        cwd=ROOT,
    )
    web = subprocess.Popen(
        [str(PYTHON), "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=ROOT
    )
    print(
        f"\nconvmem is running: API http://127.0.0.1:{port}/api/v1/ "
        f"(docs /api/v1/docs/), admin http://127.0.0.1:{port}/admin/. Ctrl-C stops it.\n",
        flush=True,
    )
    try:
        while web.poll() is None and worker.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for process in (web, worker):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in (web, worker):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


def test(args: list[str]) -> int:
    return subprocess.call([str(PYTHON), "-m", "pytest", *args], cwd=ROOT)


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in {"serve", "test"}:
        print(__doc__)
        return 2
    os.chdir(ROOT)
    ensure_environment()
    if sys.argv[1] == "serve":
        return serve(os.environ.get("PORT", "8000"))
    return test(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
