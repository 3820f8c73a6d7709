"""The caches of conversation text in a process's memory, and how long they may hold it.

The embedded writer, its scores and recall remember pure functions of statements
(``functools.lru_cache``: a statement's values, labels, shapes), because a thread's memo
writes read the same statements again and again. Their keys and values are conversation text,
so erased text must not stay in them for long: the process that runs an erasure drops them all
when it commits (``drop_all_on_commit``), and every process drops them all every
``CONVMEM_TEXT_CACHE_SECONDS`` from a timer thread of its own — an idle one too, and the
workers and web processes an erasure in another process cannot reach. The timer starts at the
first entry a process remembers (a forked child starts its own), so a process that never
remembers text runs none.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.db import transaction

Result = TypeVar("Result")


@dataclass(frozen=True)
class _Cache:
    clear: Callable[[], None]
    size: Callable[[], int]


_CACHES: list[_Cache] = []
_timer_pid: int | None = None
_timer_lock = threading.Lock()


def _timer_lock_renew() -> None:
    """A forked child gets a lock of its own: another thread of its parent may have held the
    parent's at the fork, and that thread did not come along to release it."""
    global _timer_lock
    _timer_lock = threading.Lock()


os.register_at_fork(after_in_child=_timer_lock_renew)


def text_cache(
    maxsize: int,
) -> Callable[[Callable[..., Result]], functools._lru_cache_wrapper[Result]]:
    """``functools.lru_cache(maxsize)`` for a function of conversation text: dropped with the
    others by ``drop_all`` and by this process's timer."""

    def remember(function: Callable[..., Result]) -> functools._lru_cache_wrapper[Result]:
        @functools.wraps(function)
        def on_miss(*args: Any) -> Result:
            remembering()
            return function(*args)

        cached = functools.lru_cache(maxsize=maxsize)(on_miss)
        register(clear=cached.cache_clear, size=lambda: cached.cache_info().currsize)
        return cached

    return remember


def register(*, clear: Callable[[], None], size: Callable[[], int]) -> None:
    """Count another cache of conversation text among this process's: ``clear`` forgets its
    entries, ``size`` tells how many it holds. It calls ``remembering`` as it adds one."""
    _CACHES.append(_Cache(clear, size))


def drop_all() -> None:
    """Forget every entry of every text cache of this process."""
    for cache in _CACHES:
        cache.clear()


def drop_all_on_commit() -> None:
    """Drop this process's text caches once the current transaction (an erasure) commits."""
    transaction.on_commit(drop_all)


def remembered_entries() -> int:
    """How many entries the text caches of this process hold."""
    return sum(cache.size() for cache in _CACHES)


def remembering() -> None:
    """Called as a cache adds an entry: starts this process's timer once (the pid tells a
    forked child, whose parent's thread did not come along)."""
    global _timer_pid
    if _timer_pid == os.getpid():
        return
    with _timer_lock:
        if _timer_pid == os.getpid():
            return
        _timer_pid = os.getpid()
        threading.Thread(target=_drop_forever, name="convmem-text-caches", daemon=True).start()


def _drop_forever() -> None:
    while True:
        time.sleep(settings.CONVMEM_TEXT_CACHE_SECONDS)
        drop_all()
