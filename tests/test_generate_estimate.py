"""The estimate behind every --dry-run, and the default price table (issue 33, item 2)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from intima.converse.estimate import estimate_conversations
from intima.core.config import (
    ModelConfig,
    ModelSpec,
    Price,
    PriceTable,
    default_price_table,
    load_price_table,
    price_table_for,
)
from intima.core.errors import ConfigError
from intima.core.spending import require_prices
from intima.dataset import load_prompts
from intima.generate.estimate import CHARS_PER_TOKEN, approx_tokens, estimate_run
from intima.providers.base import Message
from intima.store import Store

PRICE = Price(input_per_mtok=1000.0, output_per_mtok=2000.0)


def _by_hand(text: str, system: str | None = None) -> int:
    """One single-turn request counted as the docs say: 4 characters a token, 4 tokens a
    message, 3 a request."""
    chars = len(text) + (len(system) if system else 0)
    messages = 2 if system else 1
    return math.ceil(chars / 4) + 4 * messages + 3


def test_approx_tokens_counts_every_message_and_the_template() -> None:
    assert CHARS_PER_TOKEN == 4
    msgs = [Message(role="system", content="x" * 9), Message(role="user", content="y" * 8)]
    assert approx_tokens(msgs) == math.ceil(17 / 4) + 2 * 4 + 3
    assert approx_tokens(msgs, extra_chars=3) == 5 + 2 * 4 + 3


def test_the_default_table_is_dated_and_prices_the_listed_hosted_models() -> None:
    from intima.service.public import API_ALLOW_LIST

    table = default_price_table()
    assert table.source is not None and "default price table (as of 20" in table.source
    for provider, models in API_ALLOW_LIST.items():
        for model in models:
            spec = ModelSpec.parse(f"{provider}:{model}")
            assert table.for_model(spec) is not None, spec
            assert table.priced_by(spec) == table.source
    require_prices(table, 1.0, [ModelConfig(spec="openai:gpt-4o-mini")])  # no file needed
    # keyed provider:model: a local server's model of the same name is not OpenAI's
    assert table.for_model(ModelSpec.parse("openai-compat:gpt-4o-mini")) is None
    with pytest.raises(ConfigError, match=r"cannot price hf:.*default price table \(as of"):
        require_prices(table, 1.0, [ModelConfig(spec="hf:meta-llama/Llama-3.1-8B-Instruct")])


def test_a_price_file_wins_over_the_default_entry_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    # bare name: it must still beat the default's openai:gpt-4o-mini, looked up first
    path.write_text('["gpt-4o-mini"]\ninput_per_mtok = 7.0\noutput_per_mtok = 9.0\n')
    table = price_table_for(path)
    mini, o3 = ModelSpec.parse("openai:gpt-4o-mini"), ModelSpec.parse("openai:o3")
    assert table.for_model(mini) == Price(input_per_mtok=7.0, output_per_mtok=9.0)
    assert table.priced_by(mini) == f"the price table {path}"
    assert table.for_model(o3) == default_price_table().for_model(o3)  # the rest still apply
    assert table.priced_by(o3) == default_price_table().source
    assert price_table_for(None) == default_price_table()
    # the default table's own dated form is a valid --prices file too
    dated = tmp_path / "dated.toml"
    dated.write_text(
        'as_of = "2030-01-01"\n[prices."openai:o3"]\ninput_per_mtok = 1\noutput_per_mtok = 1\n'
    )
    assert load_price_table(dated).source == f"the price table {dated} (as of 2030-01-01)"


def test_a_run_estimate_counts_only_what_the_store_lacks(tmp_path: Path) -> None:
    prompts = load_prompts("demo").first(5)
    config = ModelConfig(spec="openai:gpt-4o-mini", system_prompt="Be kind.")
    prices = PriceTable(prices={"gpt-4o-mini": PRICE}, source="the price table t")
    [est] = estimate_run(None, prompts, [config], prices)
    expected = sum(_by_hand(p.text, "Be kind.") for p in prompts.prompts)
    assert (est.requests, est.input_tokens, est.input_tokens_worst) == (5, expected, expected)
    assert (est.output_tokens_worst, est.max_tokens) == (5 * 512, 512)
    assert est.cost_low == pytest.approx(expected * 1000 / 1e6)
    assert est.cost_high == pytest.approx((expected * 1000 + 5 * 512 * 2000) / 1e6)
    assert est.priced_by == "the price table t"
    # two prompts answered: three requests are left
    from intima.generate.runner import run_record
    from intima.store import ResponseRecord, response_id_for

    with Store.open(tmp_path / "s.db") as store:
        store.ensure_run(run_record(config, prompts), prompts.prompts)
        store.record_responses([
            ResponseRecord(response_id=response_id_for(config.config_key, p.prompt_id),
                           config_key=config.config_key, prompt_id=p.prompt_id, status=status,
                           text="hi" if status == "ok" else None, attempts=1)
            for p, status in zip(prompts.prompts[:3], ("ok", "ok", "error"), strict=True)
        ])  # fmt: skip
        [partial] = estimate_run(store, prompts, [config], prices)
    assert partial.requests == 3  # the failed one is asked again
    assert partial.input_tokens == sum(_by_hand(p.text, "Be kind.") for p in prompts.prompts[2:])
    # unpriced: no cost, and it says so
    [free] = estimate_run(None, prompts, [ModelConfig(spec="openai-compat:m@http://h:1/v1")],
                          prices)  # fmt: skip
    assert (free.cost_low, free.cost_high, free.priced_by) == (None, None, None)


def test_a_conversation_estimate_counts_both_sides_at_their_worst() -> None:
    prompts = load_prompts("demo").first(2)
    a = ModelConfig(spec="openai:gpt-4o-mini")
    u = ModelConfig(spec="openai:gpt-4o", generation={"max_tokens": 100})
    assistant, user = estimate_conversations(None, a, u, prompts, 3, default_price_table())
    # 3 turns: 3 assistant requests and 2 simulated-user requests a conversation
    assert (assistant.requests, user.requests) == (6, 4)
    assert assistant.output_tokens_worst == 6 * 512 and user.output_tokens_worst == 4 * 100
    # turn k carries k-1 replies of each side: (0 + 1 + 2) * (512 + 100) per conversation
    assert assistant.input_tokens_worst - assistant.input_tokens == 2 * 3 * 612
    # the user's j-th message follows j assistant replies and j-1 of its own
    assert user.input_tokens_worst - user.input_tokens == 2 * ((512) + (2 * 512 + 100))
    assert assistant.priced_by == user.priced_by == default_price_table().source
    assert assistant.cost_high is not None and user.cost_high is not None
