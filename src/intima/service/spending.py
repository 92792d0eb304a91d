"""What a worker may spend (``intima worker --max-cost``), across every request it runs.

Each call to generation or judging gets what is left as its own ``max_cost``, so the cap is held
by the same budget ``intima run --max-cost`` uses (:class:`intima.generate.pool.Budget`: each
request's worst case held before it is sent), and what each call spent is added up here. A model
with no price cannot be held to a cap, so a request for one is refused rather than run uncapped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from intima.core.config import ModelConfig, PriceTable
from intima.core.errors import ConfigError, IntimaError


class BudgetReached(IntimaError):
    """The worker's --max-cost is spent: the request in hand goes back to the queue."""


class NoPrice(IntimaError):
    """A model the price table does not name: the request cannot be held to --max-cost."""


@dataclass
class Spending:
    prices: PriceTable | None = None
    limit: float | None = None
    spent: float = 0.0

    def __post_init__(self) -> None:
        if self.limit is not None and self.prices is None:
            raise ConfigError("--max-cost needs a price table: pass --prices FILE")

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    def check_judges(self, judges: Sequence[ModelConfig]) -> None:
        """Before anything is claimed: every judge must have a price to be held to the cap."""
        for judge in judges:
            self.check_price(judge, "judge")

    def call_args(self, config: ModelConfig, role: str = "model") -> dict[str, Any]:
        """``prices`` and ``max_cost`` (what is left) for one generation or judging call."""
        if self.limit is None:
            return {"prices": self.prices}
        self.check_price(config, role)
        if self.exhausted:
            raise BudgetReached(self.reached())
        return {"prices": self.prices, "max_cost": self.limit - self.spent}

    def add(self, costs: Iterable[float | None]) -> None:
        self.spent += sum(c for c in costs if c)

    def reached(self) -> str:
        return f"the worker's --max-cost is reached (${self.spent:.4f} of ${self.limit:g} spent)"

    def check_price(self, config: ModelConfig, role: str = "model") -> None:
        """Raise :class:`NoPrice` if a cap is set and the table has no price for the model."""
        if self.limit is None or self.prices is None:
            return
        if self.prices.for_model(config.parsed) is None:
            spec = config.parsed
            raise NoPrice(
                f"no price for the {role} {spec.provider}:{spec.model} in --prices, so --max-cost "
                f"cannot be held: add {spec.model!r} to the price table (0 for a free one)"
            )
