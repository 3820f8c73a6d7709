"""The per-key rate limit's cost per request: DRF's ``SimpleRateThrottle`` on Django's Redis
cache (what convmem used before) against ``convmem.auth.ApiKeyRateThrottle`` (a sliding-window
counter in Redis, ``limits``), side by side in one run, on the same Redis.

DRF's throttle keeps one timestamp per request of the window in a single cache entry, read and
written whole on every request; so its cost grows with the requests a key has made in the
window. Measured with 1, 500 and 3,000 requests already in the window (``API_RATE`` is
6000/min by default), median µs per request over ``--rounds`` requests.

    REDIS_URL=redis://… .venv/bin/python bench/throttle.py
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        raise SystemExit("needs REDIS_URL")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.cache.backends.redis import RedisCache
    from rest_framework.throttling import SimpleRateThrottle

    from convmem.auth import ApiKeyRateThrottle

    drf_cache = RedisCache(settings.REDIS_URL, {})

    class DrfThrottle(SimpleRateThrottle):
        cache = drf_cache
        rate = "1000000/min"

        def get_cache_key(self, request, view):
            return self.key

    class Limiter(ApiKeyRateThrottle):
        rate = "1000000/min"

        def get_cache_key(self, request, view):
            return self.key

    print(f"µs per request, median of {args.rounds} (the same Redis, in turn)")
    print(f"{'already in the window':>22}{'DRF':>10}{'convmem':>10}{'ratio':>8}")
    for filled in (1, 500, 3000):
        times: dict[str, list[float]] = {"drf": [], "convmem": []}
        throttles = {"drf": DrfThrottle(), "convmem": Limiter()}
        for name, throttle in throttles.items():
            throttle.key = f"bench-throttle-{name}-{filled}-{time.time_ns()}"
            for _ in range(filled):
                throttle.allow_request(None, None)
        for _ in range(args.rounds):
            for name, throttle in throttles.items():
                started = time.perf_counter()
                assert throttle.allow_request(None, None)
                times[name].append(time.perf_counter() - started)
        drf, ours = (statistics.median(times[n]) * 1e6 for n in ("drf", "convmem"))
        print(f"{filled:>22,}{drf:>10.0f}{ours:>10.0f}{drf / ours:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
