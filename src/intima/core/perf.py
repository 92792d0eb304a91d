"""Performance helpers shared by the layers that build many objects at once."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects that form no cycles.

    Loading a board or scoring a batch creates ~10^5 objects; every automatic collection then
    scans them (and, with torch loaded, over a million of its objects) for nothing: ~40% of a
    50-configuration board build, more than the affect scoring itself. Reference counting still
    frees everything as usual, and collection resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
