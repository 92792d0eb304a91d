"""The blocking twin of an ``async def`` API function, for scripts and the CLI.

``generate``/``agenerate``, ``judge``/``ajudge`` and the batch pairs are one function each,
written once as a coroutine; the blocking name is made here, with the same parameters (for mypy
and editors, through :class:`typing.ParamSpec`), the same documentation and ``help()``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def blocking(coroutine_function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """``afoo`` -> ``foo``: the same call, run to its end in a new event loop
    (``asyncio.run``); inside a running loop (a Jupyter cell), await ``afoo`` instead."""

    @functools.wraps(coroutine_function)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return asyncio.run(coroutine_function(*args, **kwargs))

    name = coroutine_function.__name__.removeprefix("a")
    run.__name__ = name
    run.__qualname__ = name  # module-level functions: the name is the qualified name
    run.__doc__ = (
        f"The blocking form of :func:`{coroutine_function.__name__}` (asyncio.run): "
        f"{coroutine_function.__doc__ or ''}"
    )
    return run
