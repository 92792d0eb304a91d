"""Random samples recomputed, not believed (issue 37): a recorded sample says which judgments
feed a prediction-powered share, so a hand-picked one would set the board's headline.

A sample of a design that feeds the estimator (:data:`~intima.judges.samples.WEIGHABLE`) is
what its seed and design give: its members, in their recorded places, are the first ``size``
of the seeded order (:func:`~intima.judges.samples.sample_order`) of the answers it was drawn
from, and a stratified sample's strata are those answers' dimensions with their counts (the
weights the board applies). Those answers are found again too
(:func:`~intima.judges.sample_check.drawn_population`): the run's answers, or, when the run
grew since (a resumed run), its first ``population`` answers by when they were stored, whose
ids must give the recorded digest. Nothing else about it is believed. Annotate's pooled design
(``stratified_dimension``) feeds no share and is not recomputed.

- **On import** (:func:`unseeded`: ``intima import`` refuses the whole import, the board's
  read of a results repo refuses the bundle): over every row the import would leave in the
  store, the store's and every bundle's, so a bundle that holds only some of a run's responses
  cannot make its hand-picked members the first N of a smaller run.
- **In a store** (:func:`store_problems`, ``intima doctor``): every recorded sample, so a store
  written by an import from before this check is found (and ``--fix`` removes the sample; its
  judgments stay, as judgments outside any sample).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from intima.judges.sample_check import recomputed
from intima.judges.samples import WEIGHABLE, Sample
from intima.store import Store, StoredResponse

Rows = Mapping[str, Sequence[Mapping[str, Any]]]
Key = tuple[str, str]  # (run id, judge key)
#: The tables that record a sample; a bundle holding a row of one speaks for the sample.
SAMPLE_TABLES: Final = ("judgment_samples", "judgment_sample_members", "judgment_sample_strata")


def unseeded(store: Store, bundles: Sequence[tuple[str, Rows]]) -> dict[str, str]:
    """Each bundle (by name) that holds a row of a sample whose members or weights are not
    what its seed and design give, over the store's rows and every bundle's -> why."""
    keys = {_key(r) for _, data in bundles for t in SAMPLE_TABLES for r in data.get(t, ())}
    if not keys:
        return {}
    found = sample_problems([store_rows(store, {k[0] for k in keys}), *(d for _, d in bundles)])
    why: dict[str, str] = {}
    for name, data in bundles:
        for key in sorted({_key(r) for t in SAMPLE_TABLES for r in data.get(t, ())}):
            if key in found:
                why.setdefault(name, found[key])
    return why


def store_problems(store: Store) -> list[tuple[int, str]]:
    """(rowid in ``judgment_samples``, why) of every recorded sample of the store that is not
    what its seed and design give."""
    runs = {r[0] for r in store.query("SELECT DISTINCT run_id FROM judgment_samples")}
    found = sample_problems([store_rows(store, runs)]) if runs else {}
    return [
        (int(r[0]), found[(r[1], r[2])])
        for r in store.query("SELECT rowid, run_id, judge_key FROM judgment_samples")
        if (r[1], r[2]) in found
    ]


def sample_problems(sources: Iterable[Rows]) -> dict[Key, str]:
    """(run id, judge key) of every sample in ``sources`` whose members or strata differ from
    its recomputation over the union of the sources' rows -> what differs."""
    union = _Union(sources)
    return {
        key: f"{_named(key, row)} {problem}; a sample is recomputed from its seed and design"
        for key, row in union.samples.items()
        if row.get("design") in WEIGHABLE and (problem := union.problem(key, row))
    }


def store_rows(store: Store, run_ids: Collection[str]) -> dict[str, list[dict[str, Any]]]:
    """The store's rows a recomputation of these runs' samples reads (a response's text only
    as whether it has one, its ``created_at`` to find the answers a sample was drawn from)."""
    ids = json.dumps(sorted(run_ids))
    runs = "SELECT value FROM json_each(?)"
    sql = {
        "runs": f"SELECT run_id, config_key FROM runs WHERE run_id IN ({runs})",
        "run_prompts": f"SELECT run_id, prompt_id FROM run_prompts WHERE run_id IN ({runs})",
        "prompts": "SELECT prompt_id, dimension FROM prompts WHERE prompt_id IN (SELECT "
        f"prompt_id FROM run_prompts WHERE run_id IN ({runs}))",
        "responses": "SELECT response_id, config_key, prompt_id, status, created_at, CASE WHEN "
        "text IS NULL THEN NULL ELSE '' END AS text FROM responses WHERE config_key IN "
        f"(SELECT config_key FROM runs WHERE run_id IN ({runs}))",
        **{t: f'SELECT * FROM "{t}" WHERE run_id IN ({runs})' for t in SAMPLE_TABLES},
    }
    return {table: [dict(r) for r in store.query(q, (ids,))] for table, q in sql.items()}


def _key(row: Mapping[str, Any]) -> Key:
    return str(row.get("run_id")), str(row.get("judge_key"))


def _size(row: Mapping[str, Any]) -> int:
    size = row.get("size")
    return size if isinstance(size, int) else -1


def _named(key: Key, row: Mapping[str, Any]) -> str:
    return (
        f"the {str(row.get('design'))[:30]} sample of run {key[0][:12]!r} for judge "
        f"{key[1][:60]!r} (seed {row.get('seed')!r}, size {row.get('size')!r})"
    )


class _Union:
    """The rows of several sources (the store, bundles) a recomputation reads; of two rows
    under one key the first is kept (rows that differ are refused as conflicts elsewhere),
    but of two copies of a sample the larger."""

    def __init__(self, sources: Iterable[Rows]) -> None:
        self.config: dict[str, Any] = {}
        self.prompts: dict[str, list[Any]] = {}
        self.dimension: dict[Any, Any] = {}
        self.answered: dict[tuple[Any, Any], Any] = {}  # (config key, prompt id) -> response id
        self.stored_at: dict[str, str] = {}  # response id -> when it was stored
        self.samples: dict[Key, Mapping[str, Any]] = {}
        self.members: dict[Key, dict[Any, Any]] = {}  # position -> response id
        self.strata: dict[Key, dict[Any, Any]] = {}  # stratum -> population
        for data in sources:
            self._add(data)

    def _add(self, data: Rows) -> None:
        for r in data.get("runs", ()):
            self.config.setdefault(str(r.get("run_id")), r.get("config_key"))
        for r in data.get("run_prompts", ()):
            mine = self.prompts.setdefault(str(r.get("run_id")), [])
            if r.get("prompt_id") not in mine:
                mine.append(r.get("prompt_id"))
        for r in data.get("prompts", ()):
            self.dimension.setdefault(r.get("prompt_id"), r.get("dimension"))
        for r in data.get("responses", ()):
            if r.get("status") == "ok" and isinstance(r.get("text"), str):
                at = (r.get("config_key"), r.get("prompt_id"))
                if at not in self.answered:
                    self.answered[at] = r.get("response_id")
                    self.stored_at[str(r.get("response_id"))] = str(r.get("created_at", ""))
        for r in data.get("judgment_samples", ()):
            # The grown copy of a sample is the one the import keeps (identity.GROWS).
            had = self.samples.setdefault(_key(r), r)
            if _size(r) > _size(had):
                self.samples[_key(r)] = r
        for r in data.get("judgment_sample_members", ()):
            self.members.setdefault(_key(r), {}).setdefault(r.get("position"), r.get("response_id"))
        for r in data.get("judgment_sample_strata", ()):
            self.strata.setdefault(_key(r), {}).setdefault(r.get("stratum"), r.get("population"))

    def population(self, run_id: str) -> list[StoredResponse]:
        """The run's answered responses, as the seeded order reads them."""
        config = self.config.get(run_id)
        out = []
        for prompt_id in self.prompts.get(run_id, ()):
            if (rid := self.answered.get((config, prompt_id))) is not None:
                dim, pid = str(self.dimension.get(prompt_id)), str(prompt_id)
                out.append(StoredResponse(str(rid), run_id, "", "", pid, "", dim, "", ""))
        return out

    def problem(self, key: Key, row: Mapping[str, Any]) -> str | None:
        """What differs between the recorded sample and its recomputation, or None: the
        members as the readers take them (those placed under its size, in their order)."""
        size, seed, drawn = row.get("size"), row.get("seed"), row.get("population")
        if not isinstance(size, int) or not isinstance(seed, int) or not isinstance(drawn, int):
            return "has no whole size, seed and population"  # (the row checks refuse these)
        placed = sorted(
            (p, str(rid))
            for p, rid in self.members.get(key, {}).items()
            if isinstance(p, int) and p < size
        )
        strata = tuple(sorted((str(h), n) for h, n in self.strata.get(key, {}).items()))
        digest = row.get("population_sha256")
        sample = Sample(
            *key,
            str(row.get("design")),
            seed,
            size,
            drawn,
            tuple(rid for _, rid in placed),
            strata,
            digest if isinstance(digest, str) else None,
        )
        return recomputed(sample, self.population(key[0]), self.stored_at)[0]
