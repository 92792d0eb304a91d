"""The judges' recorded random samples as the board uses them: each checked against the
answers it was drawn from, and placed under its configuration's run, or kept with why it feeds
no prediction-powered share."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace

from intima.results.prediction import BoardSample
from intima.store import Store, StoredResponse


def board_samples(
    store: Store,
    run_ids: Sequence[str],
    responses: Sequence[StoredResponse],
    names: Mapping[str, str],
) -> list[BoardSample]:
    """The judges' recorded random samples of these runs, each named as its judge's scorer
    on the board (``names``: judge key -> ``judge:<label>``, or ``human:<annotator>``). A
    sample whose members are not what its seed and design give over the answers it was drawn
    from is left out (a store written by an import from before samples were recomputed:
    ``intima doctor`` lists it); one drawn before its run grew is kept with why it feeds no
    share (``unused``)."""
    from intima.judges.sample_check import recomputed
    from intima.judges.samples import samples

    by_run: dict[str, list[StoredResponse]] = {}
    for r in responses:
        by_run.setdefault(r.run_id, []).append(r)
    stored_at: dict[str, str] = {
        row[0]: row[1]
        for row in store.query(
            "SELECT response_id, created_at FROM responses WHERE response_id IN (SELECT value "
            "FROM json_each(?))",
            (json.dumps([r.response_id for r in responses]),),
        )
    }
    out = []
    for s in samples(store, run_ids):
        if s.judge_key not in names:  # a sample drawn but not judged yet has no scorer
            continue
        run = by_run.get(s.run_id, [])
        problem, drawn = recomputed(s, run, stored_at)
        if problem is not None:
            continue
        judge = names[s.judge_key]
        unused = (
            ""
            if drawn == len(run)
            else (
                f"{judge}'s sample was drawn when its run had {drawn} answers; it has {len(run)} "
                "now (resumed since): ask for the sample again (intima judge --sample, or "
                "intima annotate --design random) to draw it over all of them, keeping the labels "
                "already made"
            )
        )
        out.append(
            BoardSample(
                s.run_id, judge, s.design, s.seed, s.size, s.population, s.members, s.strata, unused
            )
        )
    return out


def placed_samples(
    samples: Sequence[BoardSample],
    board_id: Mapping[str, str],
    covering: Set[str],
    every: Sequence[StoredResponse],
) -> list[BoardSample]:
    """Each sample under its configuration's run on the board. One of a run that did not
    answer all its configuration's prompts there is not a random sample of them: kept with
    why it feeds no share, unless the judge has a sample that does."""
    answered: dict[str, set[str]] = {}
    for r in every:
        answered.setdefault(r.run_id, set()).add(r.prompt_id)
    total: dict[str, set[str]] = {}
    for run_id, prompts in answered.items():
        total.setdefault(board_id[run_id], set()).update(prompts)
    placed: dict[tuple[str, str], BoardSample] = {}
    for s in samples:
        board = board_id[s.run_id]
        if s.run_id not in covering and not s.unused:
            whole = sorted(r for r in covering if board_id[r] == board)
            s = replace(
                s,
                unused=(
                    f"{s.judge}'s sample is of a run that answered {len(answered[s.run_id])} of "
                    f"this configuration's {len(total[board])} prompts, so not a random sample of "
                    "them: "
                    + (
                        f"sample run {whole[0][:12]} (intima judge --sample N --run "
                        f"{whole[0][:12]})"
                        if whole
                        else "answer all of them in one run (intima run "
                        "with the same settings) and sample that run"
                    )
                ),
            )
        kept = placed.get((s.judge, board))
        if kept is None or (kept.unused and not s.unused):
            placed[s.judge, board] = replace(s, run_id=board)
    return list(placed.values())
