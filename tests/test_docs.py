"""Every setting the code reads from the environment is documented under docs/, and every
task route is the queue docs/operations.md gives it."""

import ast
import re
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ("convmem", "auditlog", "threads", "compaction", "usage", "respond", "audit")
ENV_METHODS = {"str", "bool", "int", "float", "list", "db", "url", "json", "dict", "path"}


def _runtime_sources() -> list[Path]:
    files = [ROOT / "dev.py", ROOT / "manage.py"]
    for app in RUNTIME:
        files += [p for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]
    return files


def _first_string(call: ast.Call) -> str | None:
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def _is_os_environ(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def env_names_read(source: str) -> set[str]:
    """Names read through django-environ (``env.int("X")``, ``Env().str("X")``) or os.environ."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target, method = node.func.value, node.func.attr
            via_environ_lib = method in ENV_METHODS and (
                (isinstance(target, ast.Name) and target.id == "env")
                or (isinstance(target, ast.Call) and getattr(target.func, "attr", "") == "Env")
            )
            via_os = method in {"get", "setdefault"} and _is_os_environ(target)
            via_getenv = method == "getenv"
            if (via_environ_lib or via_os or via_getenv) and (name := _first_string(node)):
                names.add(name)
        elif (
            isinstance(node, ast.Subscript)
            and _is_os_environ(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            names.add(node.slice.value)
    return names - {"DJANGO_SETTINGS_MODULE"}


def test_the_scan_sees_every_kind_of_read():
    source = (
        'import os\nv = environ.Env().str("A")\nenv.int("B", default=1)\n'
        'os.environ.get("C")\nos.environ["D"]\nos.getenv("E")\n'
    )
    assert env_names_read(source) == {"A", "B", "C", "D", "E"}


def test_every_setting_read_from_the_environment_is_documented():
    read = set().union(*(env_names_read(p.read_text()) for p in _runtime_sources()))
    docs = "\n".join(p.read_text() for p in (ROOT / "docs").rglob("*.md"))
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", docs))
    assert {"DATABASE_URL", "CONVMEM_CHAT_TIMEOUT", "PORT"} <= read
    assert sorted(read - documented) == []


def _queue_table() -> dict[str, str]:
    """Task name -> queue, from the table of queues in docs/operations.md."""
    text = (ROOT / "docs" / "operations.md").read_text()
    table = text.split("| queue | tasks | why apart |", 1)[1].split("\n\n", 1)[0]
    routes = {}
    for row in table.splitlines()[2:]:
        queue, tasks = row.split("|")[1:3]
        for task in re.findall(r"`([a-z_]+\.[a-z_]+)`", tasks):
            routes[task] = queue.strip().strip("`")
    return routes


def test_every_task_route_is_the_queue_the_docs_give_it():
    routes = {task: route["queue"] for task, route in settings.CELERY_TASK_ROUTES.items()}
    assert _queue_table() == routes
    # Not behind long answers, nor waiting for a generation worker when they are all gone.
    assert routes["respond.take_over_orphaned_runs"] == "bulk"
