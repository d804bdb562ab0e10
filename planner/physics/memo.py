"""A cache for pure functions of a catalog row: the options search asks the same physics question
(a model's parameter counts, its weight bytes at a split) hundreds of thousands of times on a large
scenario, and the answer depends only on the row and the other arguments.

Rows are frozen pydantic models, so a row object never changes: answers are kept per object (by
identity, the object held beside them so that its id cannot be reused) and per argument tuple. The
cache forgets everything past MAX_ROWS objects (a long fuzz run loads thousands of catalogs).
Returned values are shared: callers must not mutate them.
"""

from __future__ import annotations

import functools

MAX_ROWS = 512
_STORE: dict[int, tuple[object, dict]] = {}


def per_row(fn):
    """Cache fn(row, *args, **kwargs) for each row object and arguments (all hashable)."""
    name = fn.__qualname__

    @functools.wraps(fn)
    def cached(row, *args, **kwargs):
        entry = _STORE.get(id(row))
        if entry is None or entry[0] is not row:
            if len(_STORE) >= MAX_ROWS:
                _STORE.clear()
            entry = _STORE[id(row)] = (row, {})
        key = (name, args, tuple(kwargs.items())) if kwargs else (name, args)
        answers = entry[1]
        try:
            return answers[key]
        except KeyError:
            value = answers[key] = fn(row, *args, **kwargs)
            return value

    cached.uncached = fn
    return cached
