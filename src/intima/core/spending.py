"""What a command may spend: the price table that prices its requests (``--prices`` over the
dated default table) and its cap (``--max-cost``), one object that ``run``, ``judge``,
``converse`` and ``worker`` build from their options and a notebook passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from intima.core.config import ModelConfig, PriceTable, default_price_table, price_table_for
from intima.core.errors import ConfigError

#: The largest ``--max-cost``, in USD: more is a typo.
MAX_COST_LIMIT = 1_000_000.0


class SpendingSettings(BaseModel):
    """``prices``: what each model costs (default: the dated default table); ``max_cost``: USD
    that may be spent, each request's worst case held before it is sent (None: no limit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prices: PriceTable = Field(default_factory=default_price_table)
    max_cost: Annotated[float, Field(ge=0, le=MAX_COST_LIMIT, allow_inf_nan=False)] | None = None

    @classmethod
    def from_options(cls, prices: Path | None, max_cost: float | None) -> SpendingSettings:
        """A command's ``--prices FILE`` (over the default table) and ``--max-cost``."""
        return cls(prices=price_table_for(prices), max_cost=max_cost)

    def require(self, configs: Iterable[ModelConfig], *, batch: bool = False) -> None:
        """Before any store or request: a cap needs a price for every model, and a batch (its
        cost known only when it ends) cannot be held to one."""
        if self.max_cost is None:
            return
        self.prices.require(c.parsed for c in configs)
        if batch:
            raise ConfigError("--max-cost cannot be held against a batch; leave out one of them")
