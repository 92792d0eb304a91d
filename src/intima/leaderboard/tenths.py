"""Shares and differences in tenths of a point, as the side-by-side view and ``intima
compare`` show them: rounded once, formatted once per distinct number (the site writes 50 x 49
ordered pairs per scope, scorer and metric)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import numpy as np
from numpy.typing import NDArray


def tenth_array(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Shares or differences as whole tenths of a point, half away from zero (NaN kept):
    rounded once, so B − A and A − B read as each other's negation, and the pages and
    ``intima compare`` read the same digits (no second rounding: 0.48949 is 48.9)."""
    scaled = np.asarray(x, dtype=np.float64) * 1000
    return np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)


def tenth_points(x: NDArray[np.float64]) -> list[int | None]:
    """:func:`tenth_array` as whole numbers (None where NaN)."""
    whole = tenth_array(x)
    nan = np.isnan(whole)
    out = np.where(nan, 0, whole).astype(np.int64).tolist()
    return [None if m else v for v, m in zip(out, nan.tolist(), strict=True)] if nan.any() else out


@lru_cache(maxsize=8192)
def tenths(m: int, signed: bool = False) -> str:
    """Tenths of a point as points to one decimal (cached: the site's side-by-side files
    hold the same few thousand numbers hundreds of times)."""
    sign = "-" if m < 0 else ("+" if signed and m > 0 else "")
    return f"{sign}{abs(m) // 10}.{abs(m) % 10}"


signed_tenths = partial(tenths, signed=True)


def low_end(m: int) -> str:
    return f" [{tenths(m, True)}, "


def high_end(m: int) -> str:
    return f"{tenths(m, True)}]"


#: The whole numbers :func:`texts` reads from a table: tenths of a point up to ±200 points
#: (a difference and its interval; counts of judged pairs), others are formatted one by one.
_SPAN = 2000


@lru_cache(maxsize=8)
def text_table(text: Callable[[int], str]) -> NDArray[np.object_]:
    """``text`` of every whole number in [-_SPAN, _SPAN], then "–" (for NaN)."""
    return np.array([*map(text, range(-_SPAN, _SPAN + 1)), "–"], dtype=object)


def texts(x: NDArray[Any], text: Callable[[int], str]) -> NDArray[np.object_]:
    """``text`` of each whole number in ``x`` ("–" where NaN), each read from
    :func:`text_table` (the site writes 50 x 49 ordered pairs per scope, scorer and metric)."""
    x = np.ravel(x)
    nan = np.isnan(x)
    whole = np.where(nan, 0, x).astype(np.int64)
    outside = (np.abs(whole) > _SPAN) & ~nan
    at = np.where(nan, 2 * _SPAN + 1, np.where(outside, 0, whole + _SPAN))
    out = text_table(text)[at]
    if outside.any():
        out[outside] = [text(v) for v in whole[outside].tolist()]
    return out
