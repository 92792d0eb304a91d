"""Tests that read ../shared say in one line what is missing and how to provide it."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import _shared


def test_a_missing_shared_file_is_one_line_naming_it_and_the_variable(tmp_path: Path) -> None:
    missing = tmp_path / "shared" / "validation" / "relationship-graded-dev.jsonl"
    with pytest.raises(pytest.fail.Exception) as err:
        _shared(missing, "INTIMA_GRADED_SET")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{missing} not found")
    assert message.endswith("put it there or set INTIMA_GRADED_SET to the file")
    present = tmp_path / "there.jsonl"
    present.write_text("{}\n")
    assert _shared(present, "X") == present
