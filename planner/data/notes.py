"""Notes for the user that are not errors: a name read case-insensitively, an allowed choice that
nothing in the catalog offers. Code anywhere calls note(); while a command runs, the CLI listens
and prints each distinct note once on stderr (library callers that do not listen see none)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

_listeners: list[tuple[Callable[[str], None], set[str]]] = []


def note(text: str) -> None:
    """Tell the listening command `text`, once per command however often it is said."""
    for callback, seen in _listeners:
        if text not in seen:
            seen.add(text)
            callback(text)


@contextmanager
def listening(callback: Callable[[str], None]) -> Iterator[None]:
    """Pass every distinct note said inside the block to `callback`."""
    _listeners.append((callback, set()))
    try:
        yield
    finally:
        _listeners.pop()
