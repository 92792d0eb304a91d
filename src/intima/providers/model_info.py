"""What each run's model is, as a Hub leaderboard shows it: a link to its model card, its size,
its type (base, instruct, chat), its licence and its date.

A model named by a Hub id (``OWNER/NAME``) is looked up once with the Hub's model info; any
other model is described from its configuration (a hosted API model by its provider and name, a
local GGUF by its file name and size). The answer is stored with the run (``run_models``,
published in bundles), filled in by ``intima board build`` for runs that have none, and asked
again by ``intima models refresh``.

Never fatal: a Hub that is offline (``HF_HUB_OFFLINE``, the normal case here), unreachable,
or that says the model is private, gated or missing gives "unknown" with the reason, at once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from intima.store import Store
from intima.store.db import now
from intima.store.provenance import recorded

#: A Hub model id as the Hub allows it: OWNER/NAME, letters, digits, '.', '_' and '-'.
HUB_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
#: Providers whose model names are the vendor's own, never Hub ids.
_VENDORS: Final = frozenset({"openai", "anthropic"})
#: Seconds to wait for the Hub: a board build or a refresh must not hang on a dead network.
HUB_TIMEOUT: Final = 5.0
UNKNOWN: Final = "unknown"
_OFFLINE: Final = "the Hub is offline"
_UNREACHABLE: Final = "the Hub could not be reached"

Source = Literal["hub", "config", "unknown"]
#: The facts shown of a model -> the field that holds each.
FACTS: Final = {"card": "hub_id", "size": "parameters", "type": "kind", "licence": "license",
                "date": "date"}  # fmt: skip


class ModelInfo(BaseModel):
    """One model's facts; None where they are not known."""

    model_config = ConfigDict(frozen=True)

    source: Source
    hub_id: str | None = None
    parameters: int | None = None
    kind: str | None = None
    license: str | None = None
    date: str | None = None
    #: what the configuration says (provider and name, GGUF file and size) or why unknown
    detail: str | None = None
    #: where each fact the board shows came from, when a bundle brought any: fact
    #: (:data:`FACTS`) -> "from the Hub" or "as published by NAME (key …)"
    #: (:mod:`intima.results.model_facts`); empty: read by this board or store itself
    sources: dict[str, str] = {}
    #: why the board could not read the Hub itself for a bundle's model (its facts are then
    #: all as published)
    unfetched: str | None = None

    @property
    def url(self) -> str | None:
        """The model card's address (the id is checked against :data:`HUB_ID` first)."""
        ok = self.hub_id is not None and HUB_ID.match(self.hub_id)
        return f"https://huggingface.co/{self.hub_id}" if ok else None

    @property
    def size(self) -> str:
        return size_text(self.parameters)

    def search_text(self) -> str:
        """Everything a search over models matches, lower-cased."""
        parts = (self.hub_id, self.kind, self.license, self.date, self.detail, self.size)
        return " ".join(p for p in parts if p).lower()


def size_text(parameters: int | None) -> str:
    """135M, 1.7B, 7B, 70B: the size as model cards write it; "unknown" when not known."""
    if parameters is None or parameters <= 0:
        return UNKNOWN
    for unit, scale in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if parameters >= scale:
            value = parameters / scale
            text = f"{value:.0f}" if value >= 10 or float(round(value)) == value else f"{value:.1f}"
            return f"{text.removesuffix('.0')}{unit}"
    return str(parameters)


def hub_id_of(provider: str, model_name: str) -> str | None:
    """The Hub id a model name stands for, or None (a router's ``:policy`` suffix is cut)."""
    if provider in _VENDORS:
        return None
    name = model_name.split(":", 1)[0].strip()
    return name if HUB_ID.match(name) else None


def from_hub(hub_id: str, timeout: float = HUB_TIMEOUT) -> ModelInfo:
    """The Hub's model info for ``hub_id``; "unknown" with the reason when it cannot be read."""
    from huggingface_hub import HfApi, constants

    if constants.HF_HUB_OFFLINE:
        return ModelInfo(source="unknown", hub_id=hub_id, detail=_OFFLINE)
    try:
        info = HfApi().model_info(hub_id, timeout=timeout)
    # Any failure (offline, no network, private, gated, missing, a broken reply) is the same
    # answer: unknown, and the run or the board goes on.
    except Exception as exc:
        return ModelInfo(source="unknown", hub_id=hub_id, detail=_reason(exc))
    return ModelInfo(
        source="hub",
        hub_id=hub_id,
        parameters=_parameters(info),
        kind=_kind(hub_id, info.pipeline_tag, info.tags or []),
        license=_license(info),
        date=_date(info),
    )


def _reason(exc: Exception) -> str:
    name = type(exc).__name__
    if "NotFound" in name or "Gated" in name:
        return "private, gated or missing on the Hub"
    if "Offline" in name:
        return _OFFLINE
    return _UNREACHABLE


def _parameters(info: Any) -> int | None:
    total = getattr(info.safetensors, "total", None) if info.safetensors else None
    return total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None


def _kind(hub_id: str, pipeline_tag: Any, tags: Sequence[Any]) -> str | None:
    words = {str(t).lower() for t in tags}
    name = hub_id.lower()
    if "instruct" in name or "instruct" in words:
        return "instruct"
    if "chat" in name or "conversational" in words or "chat" in words:
        return "chat"
    if pipeline_tag == "text-generation":
        return "base"
    return str(pipeline_tag)[:40] if pipeline_tag else None


def _license(info: Any) -> str | None:
    card = info.card_data
    value = card.get("license") if card is not None else None
    if value is None:
        value = next((str(t)[8:] for t in info.tags or [] if str(t).startswith("license:")), None)
    return str(value)[:100] if value else None


def _date(info: Any) -> str | None:
    when = info.created_at or info.last_modified
    return when.date().isoformat() if when is not None else None


def from_config(provider: str, model_name: str) -> ModelInfo:
    """What the configuration says of a model that is not a Hub id."""
    gguf = _gguf(provider, model_name)
    if gguf is not None:
        size = f", {gguf.stat().st_size / 1e6:.0f} MB" if gguf.is_file() else ""
        facts: dict[str, Any] = {}
        if _is_bundled(provider, model_name):  # a known file: its facts without reading it
            from intima.providers import bundled

            facts = {
                "hub_id": bundled.HUB_ID,
                "parameters": bundled.PARAMETERS,
                "kind": "instruct",
                "license": bundled.LICENSE,
            }
        return ModelInfo(source="config", detail=f"{provider}: {gguf.name}{size}", **facts)
    return ModelInfo(source="config", detail=f"{provider}: {model_name or 'default model'}")


def _is_bundled(provider: str, model_name: str) -> bool:
    return provider in ("llamacpp", "transformers") and model_name in ("", "smollm2")


def _gguf(provider: str, model_name: str) -> Path | None:
    if model_name.lower().endswith(".gguf"):
        return Path(model_name)
    if _is_bundled(provider, model_name):
        from intima.core.errors import IntimaError
        from intima.providers.bundled import bundled_gguf

        try:
            return bundled_gguf()
        except (IntimaError, OSError):
            return None
    return None


class HubAsker:
    """Asks the Hub once per model id, and not at all once it was unreachable or offline: a
    board or a refresh of many models waits for the timeout at most once."""

    def __init__(self, timeout: float = HUB_TIMEOUT) -> None:
        self.timeout = timeout
        self.asked: dict[str, ModelInfo] = {}
        self.down: str | None = None

    def __call__(self, hub_id: str) -> ModelInfo:
        if hub_id not in self.asked:
            if self.down is not None:
                return ModelInfo(source="unknown", hub_id=hub_id, detail=self.down)
            self.asked[hub_id] = got = from_hub(hub_id, self.timeout)
            if got.detail in (_UNREACHABLE, _OFFLINE):
                self.down = got.detail
        return self.asked[hub_id]


# -- stored with the run --------------------------------------------------------------------
def record(
    store: Store, *, refresh: bool = False, timeout: float = HUB_TIMEOUT
) -> dict[str, ModelInfo]:
    """Describe every run without a description (every run with ``refresh``), asking the Hub
    once per model; returns what was written, by run id."""
    have = {r[0] for r in store.query("SELECT run_id FROM run_models")}
    runs = [
        (r[0], r[1], r[2])
        for r in store.query("SELECT run_id, provider, model_name FROM runs ORDER BY run_id")
        if refresh or r[0] not in have
    ]
    ask = HubAsker(timeout)
    found: dict[str, ModelInfo] = {}
    for run_id, provider, model_name in runs:
        hub_id = hub_id_of(provider, model_name)
        found[run_id] = from_config(provider, model_name) if hub_id is None else ask(hub_id)
    if found:
        stamp = now()
        with store.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO run_models (run_id, source, hub_id, parameters, kind, "
                "license, model_date, detail, checked_at) VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    (
                        run_id,
                        i.source,
                        i.hub_id,
                        i.parameters,
                        i.kind,
                        i.license,
                        i.date,
                        i.detail,
                        stamp,
                    )
                    for run_id, i in found.items()
                ],
            )
            if recorded(store):  # read here now: no longer what a bundle's publisher said
                conn.executemany(
                    "DELETE FROM row_publishers WHERE table_name = 'run_models' "
                    "AND row_key = json_array(?)",
                    [(run_id,) for run_id in found],
                )
    return found


def stored(store: Store) -> dict[str, ModelInfo]:
    """Each run's stored description, by run id (a bundle's rows are read as hostile: a
    value of the wrong kind is dropped, never shown raw)."""
    out: dict[str, ModelInfo] = {}
    for r in store.query(
        "SELECT run_id, source, hub_id, parameters, kind, license, model_date, detail "
        "FROM run_models"
    ):
        source: Source = "hub" if r[1] == "hub" else "config" if r[1] == "config" else "unknown"
        out[r[0]] = ModelInfo(
            source=source,
            hub_id=_text(r[2]),
            parameters=r[3] if isinstance(r[3], int) else None,
            kind=_text(r[4]),
            license=_text(r[5]),
            date=_text(r[6]),
            detail=_text(r[7]),
        )
    return out


def _text(value: Any, limit: int = 200) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None
