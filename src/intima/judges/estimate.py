"""What judging would send (``intima judge --dry-run``, ``intima validate -j --dry-run``):
one request per distinct response text each judge has not yet scored under the current judge
prompt, counted by :func:`intima.generate.estimate.estimate`."""

from __future__ import annotations

import json
from collections.abc import Sequence

from intima.core.config import ModelConfig, PriceTable
from intima.generate.estimate import Ask, Estimate, approx_tokens, estimate
from intima.judges.prompt import JUDGE_PROMPT_VERSION, judge_messages
from intima.judges.samples import SampleSpec, planned
from intima.judges.schema import reply_json_schema
from intima.judges.store_io import scored_hashes
from intima.providers import effective_config
from intima.store import Store, StoredResponse


def estimate_judging(
    store: Store | None,
    judges: Sequence[ModelConfig],
    targets: Sequence[StoredResponse],
    prices: PriceTable,
    *,
    max_reasks: int,
    sample: SampleSpec | None = None,
    every: Sequence[StoredResponse] = (),
) -> list[Estimate]:
    """Per judge: a request per distinct (prompt, response) text of ``targets`` it has not
    scored (``store`` None: nothing is stored yet), with the reply schema in its prompt. With
    ``sample``: of each run's sample for that judge instead (drawn from ``every``, the runs'
    responses, as ``intima judge --sample`` would draw it; nothing is recorded)."""
    schema_chars = len(json.dumps(reply_json_schema()))
    note = f"an invalid reply is asked again up to {max_reasks} time(s), at more cost"
    out = []
    for judge in judges:
        key = effective_config(judge).config_key  # the key its judgments are stored under
        mine = targets if sample is None or store is None else planned(store, key, every, sample)
        unique: dict[str, StoredResponse] = {}
        for t in mine:
            unique.setdefault(t.content_hash, t)  # identical text is judged once
        done = set() if store is None else scored_hashes(store, key, JUDGE_PROMPT_VERSION)
        asks = [
            Ask(approx_tokens(judge_messages(t.prompt, t.response, t.context), schema_chars))
            for h, t in unique.items()
            if h not in done
        ]
        label = f"judge {judge.display_name}"
        out.append(estimate(judge, asks, prices, label=label, note=note if max_reasks else ""))
    return out
