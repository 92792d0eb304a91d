"""What may be spent, and the one rule a cap obeys.

:class:`SpendingSettings` is what a command may spend: the price table that prices its requests
(``--prices`` over the dated default table) and its cap (``--max-cost``), one object that
``run``, ``judge``, ``converse`` and ``worker`` build from their options and a notebook passes.
:class:`Budget` is a cap being spent: each request's worst case held before it is sent
(``run``, ``judge``, ``converse``), and the worker's total over every request it runs.

The rule: **a cap needs a price for every model it covers** (:func:`require_prices`). An
unpriced model would be sent uncounted, the cap silently skipped, so it is refused before any
request, in one message (:class:`NoPrice`), wherever the cap is given: a command refuses to
start, a Python call raises, a worker fails the request for that model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from intima.core.config import ModelConfig, PriceTable, default_price_table, price_table_for
from intima.core.errors import ConfigError

#: The largest ``--max-cost``, in USD: more is a typo.
MAX_COST_LIMIT = 1_000_000.0


class NoPrice(ConfigError):
    """A cap was given for a model its price table does not price."""


def require_prices(
    prices: PriceTable | None, max_cost: float | None, configs: Iterable[ModelConfig]
) -> None:
    """The one rule: with a cap (``max_cost``), every model must have a price in ``prices``
    (None: no table); raise :class:`NoPrice` naming each model that has none."""
    if max_cost is None:
        return
    table = prices if prices is not None else PriceTable()
    missing = sorted(
        {f"{c.parsed.provider}:{c.parsed.model}" for c in configs if not table.for_model(c.parsed)}
    )
    if not missing:
        return
    it = "it" if len(missing) == 1 else "them"
    why = (
        f"{table.source} has no entry for {it}"
        if table.source
        else "no price table was given (the default one: price_table_for(None), "
        "from intima.core.config)"
    )
    raise NoPrice(
        f"--max-cost cannot price {', '.join(missing)}: {why} (add one to a file given with "
        "--prices, keyed by the model name or provider:model, with input_per_mtok and "
        "output_per_mtok; or leave out --max-cost)"
    )


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
        """Before any store or request: a cap needs a price for every model
        (:func:`require_prices`), and a batch (its cost known only when it ends) cannot be held
        to one."""
        require_prices(self.prices, self.max_cost, configs)
        if batch and self.max_cost is not None:
            raise ConfigError("--max-cost cannot be held against a batch; leave out one of them")

    def budget(self) -> Budget:
        """A budget that holds this cap (none without one)."""
        return Budget(limit=self.max_cost)


@dataclass
class Budget:
    """Caps spending at ``limit`` USD. A request's worst-case cost is held before it is sent and
    let go once its real cost is added, and a request starts only while what is spent and held
    is under the cap: spending can pass the cap by at most one request's worst case."""

    limit: float | None = None
    spent: float = 0.0
    #: worst-case costs of the requests in flight
    reserved: float = 0.0
    _changed: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def add(self, cost: float | None) -> None:
        if cost:
            self.spent += cost

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    @property
    def left(self) -> float | None:
        """What may still be spent (None: no cap)."""
        return None if self.limit is None else max(0.0, self.limit - self.spent)

    async def reserve(self, worst: float) -> bool:
        """Hold ``worst`` for a request about to start; False once the cap is reached. While
        requests in flight hold the rest of the cap, wait for them: what they do not spend
        comes back."""
        if self.limit is None:
            return True
        while not self.exhausted:
            if self.spent + self.reserved < self.limit:
                self.reserved += worst
                return True
            await self._changed.wait()
        return False

    def release(self, worst: float) -> None:
        """Let go of what was held for a finished request (its real cost is in ``spent``)."""
        if self.limit is None:
            return
        self.reserved = max(0.0, self.reserved - worst)
        self._changed.set()  # wake the waiting workers; they look at the sums again
        self._changed = asyncio.Event()
