"""What a command may spend (``SpendingSettings``): the object ``run``, ``judge`` and ``worker``
build from ``--prices`` and ``--max-cost``, checked before any store or request."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from conftest import invoke_cli
from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.core.spending import SpendingSettings

PRICED = ModelConfig(spec="openai:gpt-4o-mini")
UNPRICED = ModelConfig(spec="openai-compat:nobody-prices-me@http://127.0.0.1:9/v1")


def test_a_cap_needs_a_price_for_every_model_and_no_batch(tmp_path: Path) -> None:
    capped = SpendingSettings(max_cost=1.0)  # the dated default table
    capped.require([PRICED])
    with pytest.raises(ConfigError, match="--max-cost cannot price openai-compat:nobody-prices"):
        capped.require([PRICED, UNPRICED])
    with pytest.raises(ConfigError, match="--max-cost cannot be held against a batch"):
        capped.require([PRICED], batch=True)
    SpendingSettings().require([UNPRICED], batch=True)  # no cap: nothing to hold
    table = tmp_path / "prices.toml"
    table.write_text('["nobody-prices-me"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n')
    SpendingSettings.from_options(table, 1.0).require([PRICED, UNPRICED])  # over the default
    with pytest.raises(ValidationError, match="max_cost"):
        SpendingSettings(max_cost=float("inf"))


@pytest.mark.parametrize("command", ["run", "judge"])
def test_a_capped_batch_is_refused_in_one_line_before_any_store(
    command: str, tmp_path: Path
) -> None:
    store = tmp_path / "s.db"
    spec = ["-m" if command == "run" else "-j", "openai:gpt-4o-mini"]
    res = invoke_cli(command, *spec, "--batch", "--max-cost", "1", "--store", str(store))
    assert res.returncode == 2 and not store.exists(), res.stderr
    assert res.stderr.strip().splitlines() == [
        "error: --max-cost cannot be held against a batch; leave out one of them"
    ]
