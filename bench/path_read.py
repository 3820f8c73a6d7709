"""Path read of the last 50 messages: a thread of 100 vs 100,000 messages.

The table also holds 200 other threads of 500 messages. ``selectors.path_page`` walks leaf-up
and stops after the page, so both reads should cost the same: the ratio must be <= 1.5.

    .venv/bin/python bench/path_read.py                      # SQLite (temporary file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x .venv/bin/python bench/path_read.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_database, build_data_set, interleaved, report

PAGE = 50
REPETITIONS = 2_000


def main() -> int:
    with bench_database() as backend:
        from threads import selectors

        data = build_data_set()

        def read(thread: object) -> None:
            page = selectors.path_page(thread=thread, leaf=thread.active_leaf, limit=PAGE)
            assert len(page.messages) == PAGE
            assert page.older_start is not None

        small, big = interleaved(
            lambda: read(data.small),
            lambda: read(data.big),
            repetitions=REPETITIONS,
            warmup=100,
        )
        ok = report(f"path read (last {PAGE})", backend, small, big)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
