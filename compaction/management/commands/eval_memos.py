"""`manage.py eval_memos`: the memo evaluation (``memo_eval.project.command``).

The evaluation lives beside the apps, not in them, and is not installed with them: from a
source checkout the command runs it; where only the runtime packages are installed it says so.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

try:
    from memo_eval.project.command import Command
except ImportError:  # an installed deployment without the source tree

    class Command(BaseCommand):  # type: ignore[no-redef]
        help = "The memo evaluation; needs the memo_eval package of a source checkout."

        def handle(self, *args: Any, **options: Any) -> None:
            raise CommandError("eval_memos needs the memo_eval package (run it from a checkout)")


__all__ = ["Command"]
