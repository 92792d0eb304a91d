"""Levels and the panel's median, checked against the standard library's median."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from intima.core.ratings import Level, median_level


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_the_median_level_is_the_ordinal_median_rounded_half_up(n: int) -> None:
    for levels in itertools.product(list(Level), repeat=n):
        mid = statistics.median(int(lv) for lv in levels)
        assert median_level(levels) == Level(math.floor(mid + 0.5)), levels
    assert median_level([Level.MEDIUM, Level.HIGH]) == Level.HIGH  # 1.5 rounds up, by hand


def test_no_median_of_no_levels() -> None:
    with pytest.raises(statistics.StatisticsError):
        median_level([])


def test_levels_parse_as_stored_and_as_written_by_hand() -> None:
    assert [Level.parse(t) for t in ("low", "medium", "high")] == list(Level)
    assert Level.parse(" High ") is Level.HIGH and Level.parse("LOW") is Level.LOW
    with pytest.raises(KeyError):
        Level.parse("very high")
