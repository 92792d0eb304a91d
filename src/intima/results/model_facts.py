"""A run's model facts are the board's own reading where it can (issue 37).

A bundle's ``run_models`` row says what its publisher read of the model (card, size, type,
licence, date): a publisher's word, which a forged copy once used to point the real run's card
at a phishing page. The board therefore asks the Hub itself, once, for the model the run's
own row names (its provider and model name: never the bundle's ``hub_id``), and a fact the Hub
gives wins. Where the Hub gives none (offline, unreachable, private, a model that is not a Hub
id), the bundle's fact is shown "as published by" its publisher. Each model says where each
of its facts came from (:attr:`~intima.providers.model_info.ModelInfo.sources`).

Rows read by this store itself (``intima run``, ``board build``) are the board's reading
already and are left as they are. Offline-safe: one attempt per model, with the Hub timeout,
and none after the Hub was found unreachable (:class:`~intima.providers.model_info.HubAsker`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from intima.providers.model_info import FACTS, HUB_TIMEOUT, HubAsker, ModelInfo, hub_id_of
from intima.results.data import BoardData
from intima.store import Store
from intima.store.provenance import LOCAL, run_publishers

FROM_HUB: Final = "from the Hub"


def with_hub_facts(store: Store, data: BoardData, timeout: float = HUB_TIMEOUT) -> BoardData:
    """``data`` with each model whose facts a bundle brought read again from the Hub, fact by
    fact (the Hub's wins), and every fact's source said."""
    # (a row this store read itself, even if a bundle carried it too, is its own reading)
    published = {k: v for k, v in run_publishers(store, "run_models").items() if LOCAL not in v}
    runs = store.query("SELECT run_id, provider, model_name FROM runs")
    named = {r[0]: (r[1], r[2]) for r in runs}
    ask = HubAsker(timeout)
    models = dict(data.models)
    for run in data.runs:
        stored = next((i for i in (run.run_id, *run.runs) if published.get(i)), None)
        if stored is None or run.run_id not in models:
            continue  # read by this store itself (or not at all)
        hub_id = hub_id_of(*named[stored]) if stored in named else None
        fetched = ask(hub_id) if hub_id is not None else None
        models[run.run_id] = merged(models[run.run_id], fetched, published[stored])
    return replace(data, models=models)


def merged(bundle: ModelInfo, fetched: ModelInfo | None, publishers: tuple[str, ...]) -> ModelInfo:
    """Fact by fact: the Hub's (``fetched``, when it was read), else the bundle's, as published
    by ``publishers``."""
    read = fetched is not None and fetched.source == "hub"
    said = f"as published by {', '.join(publishers)}"
    facts: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for fact, name in FACTS.items():
        if read and (value := getattr(fetched, name)) is not None:
            facts[name], sources[fact] = value, FROM_HUB
        elif (value := getattr(bundle, name)) is not None:
            facts[name], sources[fact] = value, said
    return ModelInfo(
        source="hub" if read else bundle.source,
        detail=bundle.detail,
        sources=sources,
        unfetched=None if read or fetched is None else fetched.detail,
        **facts,
    )
