"""What a command may spend (``SpendingSettings``): the object ``run``, ``judge`` and ``worker``
build from ``--prices`` and ``--max-cost``, checked before any store or request; and the one
rule a cap obeys (``require_prices``), with its one message wherever the cap is given."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from conftest import invoke_cli
from intima.core.config import ModelConfig, PriceTable
from intima.core.errors import ConfigError
from intima.core.spending import NoPrice, SpendingSettings, require_prices
from intima.store import Store

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


#: Written out by hand: the one message, as a user reads it.
ONE_MESSAGE = (
    "--max-cost cannot price openai-compat:nobody-prices-me: the price table t has no entry "
    "for it (add one to a file given with --prices, keyed by the model name or provider:model, "
    "with input_per_mtok and output_per_mtok; or leave out --max-cost)"
)


def test_every_way_to_set_a_cap_refuses_an_unpriced_model_in_the_one_message(
    tmp_path: Path,
) -> None:
    """Issue 41: the rule "a cap needs a price" was written four times, with two messages. Now
    the settings, generation, judging and conversations all say the same line (the worker's
    two refusals are in test_worker.py and test_worker_serve.py), before anything is stored."""
    from intima.converse import converse
    from intima.dataset import load_prompts
    from intima.generate.runner import generate
    from intima.judges.loop import judge

    table = PriceTable(prices={}, source="the price table t")
    prompts = load_prompts("demo").first(1)
    db = tmp_path / "s.db"
    with Store.open(db) as store:
        calls = {
            "require_prices": lambda: require_prices(table, 1.0, [UNPRICED]),
            "settings": lambda: SpendingSettings(prices=table, max_cost=1.0).require([UNPRICED]),
            "generate": lambda: generate(store, prompts, [UNPRICED], prices=table, max_cost=1.0),
            "judge": lambda: judge(store, [UNPRICED], prices=table, max_cost=1.0),
            "converse": lambda: converse(store, UNPRICED, UNPRICED, prompts, 1, prices=table,
                                         max_cost=1.0),
        }  # fmt: skip
        said = {}
        for name, call in calls.items():
            with pytest.raises(NoPrice) as refused:
                call()
            said[name] = str(refused.value)
        assert store.query("SELECT COUNT(*) FROM runs")[0][0] == 0
    assert said == dict.fromkeys(calls, ONE_MESSAGE)
    with pytest.raises(NoPrice, match="no price table was given"):
        require_prices(None, 0.0, [PRICED])  # a cap of 0 is a cap; no table prices nothing
    require_prices(None, None, [UNPRICED])  # no cap: nothing to price
