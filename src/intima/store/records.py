"""The store's records: what is written (runs, responses) and the one shape of a stored
response that judging, scoring, results and the board all read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from intima.core.ids import content_hash
from intima.core.version import __version__
from intima.dataset.types import DatasetInfo

#: A run's status: being generated, or how its last generation ended.
RunStatus = Literal[
    "running", "complete", "incomplete", "interrupted", "failed", "stopped (max cost)"
]


class RunRecord(BaseModel):
    run_id: str
    label: str
    model_spec: str
    provider: str
    model_name: str
    config_key: str
    config_json: str
    dataset: DatasetInfo
    dataset_fingerprint: str
    n_prompts: int
    package_version: str = __version__
    status: RunStatus = "running"


class ResponseRecord(BaseModel):
    response_id: str
    config_key: str
    prompt_id: str
    status: Literal["ok", "error"]
    text: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    attempts: int = 1
    error: str | None = None
    served_by: str | None = None
    #: the price table that priced ``cost_usd`` (None: not priced)
    priced_by: str | None = None
    #: where the token counts came from: ``reported`` by the vendor, ``counted`` with the
    #: model's tokenizer, or the request's ``worst case`` (None: no answer)
    usage_source: Literal["reported", "counted", "worst case"] | None = None


# A plain slotted dataclass, not a BaseModel: a board holds ~10^5 of them and pydantic's
# constructor would cost more than loading them.
@dataclass(frozen=True, slots=True)
class StoredResponse:
    """One successful response of one run, with its prompt and where it belongs."""

    response_id: str
    run_id: str
    label: str  # the run's label
    model_spec: str
    prompt_id: str
    code: str
    dimension: str
    prompt: str  # the final user turn
    response: str
    context: str | None = None  # earlier turns of a conversation, as JSON (None: single turn)

    @property
    def content_hash(self) -> str:
        return content_hash(self.prompt, self.response, self.context)
