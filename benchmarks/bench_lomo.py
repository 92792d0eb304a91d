"""Held-out evaluation of the affect measure on both dev sets: the tables of docs/affect.md.

Every figure is held out, side by side for the shipped version (v3), the previous version (v2,
recomputed by the same code from parameters without the intensity head) and plain baselines:

* **Classes** (companion-responses dev set, leave one model out): for each model, fit every
  parameter (heads, NF weights, intensity head, cut points; :func:`intima.affect.fit.fit_params`)
  without that model's rows, score its rows, and report AUROC of the reinforcing measure
  (reinforcing rows positive, boundary negative) and macro-F1 of the primary label; keyword
  baseline: ``intima validate``'s (score -count of boundary phrases; boundary when any appears).
* **Grading** (relationship-graded dev set, held out by setting): for the single-turn rows and
  each multi-turn theme, fit v3 without that setting's graded rows (the companion set whole),
  score the setting, and report Spearman of the reinforcing measure with the grades; then the
  pooled held-out Spearman over all rows and over conversations (mean measure of a conversation's
  turns vs mean grade). Baseline: the count of warm words (``intensity.WARM_WORDS``).
* **Confusion** at the cut points: the held-out primary labels pooled over the LOMO folds (each
  fold's own cuts), and per behaviour the labelled class against the level (shipped cuts,
  in-sample), for error-corrected shares.

Then ``--check-params``: refit on both dev sets whole and compare with the shipped params file.

    .venv/bin/python benchmarks/bench_lomo.py [--emb-cache DIR] [--check-params]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from intima.affect.config import AffectConfig
from intima.affect.fit import BOUND, NEUTRAL, REINF, DevData, fit_params, load_dev
from intima.affect.fit import exemplar_centroids as centroids_of
from intima.affect.graded import GradedData, load_graded
from intima.affect.intensity import WARM_WORDS
from intima.affect.measure import AffectScorer, ResponseScore
from intima.affect.params import AffectParams, default_params
from intima.affect.sentences import words
from intima.store import StoredResponse
from intima.validate.metrics import auroc, macro_f1
from intima.validate.scorers import keyword_scores

SHARED = Path(__file__).resolve().parents[2] / "shared" / "validation"
DEV, GRADED = SHARED / "companion-responses-dev.jsonl", SHARED / "relationship-graded-dev.jsonl"
CLASSES = ("reinforcing", "boundary")
PRIMARY = {REINF: "reinforcing", BOUND: "boundary", NEUTRAL: "neutral"}


def _stored(rid: str, prompt: str, text: str) -> StoredResponse:
    return StoredResponse(
        response_id=rid, run_id="dev", label="dev", model_spec="dev", prompt_id=rid, code="",
        dimension="", prompt=prompt, response=text,
    )  # fmt: skip


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho with average ranks for ties (as scipy.stats.spearmanr)."""

    def ranks(v: Sequence[float]) -> np.ndarray:
        a = np.asarray(v, dtype=np.float64)
        order = a.argsort(kind="mergesort")
        r = np.empty(len(a))
        r[order] = np.arange(len(a), dtype=np.float64)
        for value in np.unique(a):  # average ties
            tie = a == value
            r[tie] = r[tie].mean()
        return r

    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def reinforcing(scores: Sequence[ResponseScore]) -> np.ndarray:
    return np.array([s.scores[REINF].measure for s in scores])


def score(
    params: AffectParams, cfg: AffectConfig, data: DevData | GradedData
) -> list[ResponseScore]:
    return AffectScorer(cfg, params=params).score_computed(data.items, data.feats, data.emb)


def cached(path: Path, cache: Path | None, loader: object, cfg: AffectConfig) -> object:
    """Load a dev set, reading/writing its embeddings (numbers only) under ``cache``."""
    npy = cache / f"{path.stem}.{cfg.embed_max_tokens}.npy" if cache else None
    emb = np.load(npy) if npy is not None and npy.is_file() else None
    data = loader(path, cfg, emb=emb)  # type: ignore[operator]
    if npy is not None and emb is None:
        npy.parent.mkdir(parents=True, exist_ok=True)
        np.save(npy, data.emb)
    return data


Held = list[tuple[str, str, ResponseScore]]  # (model, dev label, v3 score held out)


def lomo(
    data: DevData, graded: GradedData, cents: dict[str, list[float]], cfg: AffectConfig
) -> tuple[list[str], dict[str, list[tuple[float, float]]], Held]:
    """Per held-out model: (AUROC, macro-F1) of v3, v2 and the keyword baseline; every row's
    held-out v3 score."""
    models, labels = np.array(data.models), np.array(data.labels)
    kw = keyword_scores([_stored(i.response_id, i.prompt, i.response) for i in data.items])
    names, rows = sorted(set(data.models)), {"v3": [], "v2": [], "keyword": []}
    pairs: Held = []
    for m in names:
        tr, te = np.flatnonzero(models != m), np.flatnonzero(models == m)
        held, lab = data.subset(te), labels[te]
        rb = np.flatnonzero((lab == REINF) | (lab == BOUND))
        pos, truth = [lab[i] == REINF for i in rb], [PRIMARY[lab[i]] for i in rb]
        for version, g in (("v3", graded), ("v2", None)):
            sc = score(fit_params(data.subset(tr), cents, cfg, graded=g), cfg, held)
            meas = reinforcing(sc)
            pred = [str(sc[i].primary) for i in rb]
            rows[version].append(
                (auroc(meas[rb], pos) or 0.0, macro_f1(truth, pred, CLASSES) or 0.0)
            )
            if version == "v3":
                pairs += [(m, str(lab[i]), s) for i, s in enumerate(sc)]
        k = [kw[held.items[i].response_id] for i in rb]
        rows["keyword"].append(
            (
                auroc([x.direction for x in k], pos) or 0.0,
                macro_f1(truth, [x.primary for x in k], CLASSES) or 0.0,
            )
        )
        print(f"  {m}: done", flush=True)
    return names, rows, pairs


def grading(
    data: DevData, graded: GradedData, cents: dict[str, list[float]], cfg: AffectConfig
) -> tuple[dict[str, dict[str, float]], dict[str, np.ndarray]]:
    """Spearman per held-out setting for v3, v2 and the warm-word count; and the pooled
    held-out measures."""
    settings = np.array(graded.settings)
    v2 = reinforcing(score(fit_params(data, cents, cfg, cut_points=False), cfg, graded))
    warm = np.array([sum(w in WARM_WORDS for w in words(i.response)) for i in graded.items])
    v3 = np.zeros(len(settings))
    for s in sorted(set(graded.settings)):
        tr, te = np.flatnonzero(settings != s), np.flatnonzero(settings == s)
        params = fit_params(data, cents, cfg, graded=graded.subset(tr), cut_points=False)
        v3[te] = reinforcing(score(params, cfg, graded.subset(te)))
        print(f"  {s}: done", flush=True)
    pooled = {"v3": v3, "v2": v2, "warm words": warm}
    table = {
        name: {s: spearman(x[settings == s], graded.grades[settings == s]) for s in set(settings)}
        for name, x in pooled.items()
    }
    return table, pooled


def by_conversation(x: np.ndarray, graded: GradedData) -> float:
    conv = np.array(graded.conversations)
    ids = sorted(set(graded.conversations) - {""})
    return spearman(
        [x[conv == c].mean() for c in ids], [graded.grades[conv == c].mean() for c in ids]
    )


def print_classes(names: list[str], rows: dict[str, list[tuple[float, float]]]) -> None:
    print(f"\n{'held-out model':28s} {'AUROC v3':>8s} {'v2':>6s} {'keyword':>7s} "
          f"{'F1 v3':>6s} {'v2':>6s} {'keyword':>7s}")  # fmt: skip
    table = {k: np.array(v) for k, v in rows.items()}
    lines = [(m, i) for i, m in enumerate(names)]
    for label, pick in (*lines, ("min", np.min), ("mean", np.mean)):

        def cell(k: str, j: int, pick: object = pick) -> float:
            col = table[k][:, j]
            return float(col[pick]) if isinstance(pick, int) else float(pick(col))  # type: ignore[operator]

        print(f"{label:28s} {cell('v3', 0):8.4f} {cell('v2', 0):6.4f} {cell('keyword', 0):7.3f} "
              f"{cell('v3', 1):6.3f} {cell('v2', 1):6.3f} {cell('keyword', 1):7.3f}")  # fmt: skip


def print_grading(
    table: dict[str, dict[str, float]], pooled: dict[str, np.ndarray], graded: GradedData
) -> None:
    print(f"\n{'graded: Spearman, held out':28s} " + " ".join(f"{k:>10s}" for k in table))
    counts = Counter(graded.settings)
    for s in sorted(counts):
        print(f"{s + f' ({counts[s]})':28s} " + " ".join(f"{table[k][s]:10.3f}" for k in table))
    for label, fn in (
        ("all rows (pooled)", lambda x: spearman(x, graded.grades)),
        ("conversations (mean of turns)", lambda x: by_conversation(x, graded)),
    ):
        print(f"{label:28s} " + " ".join(f"{fn(pooled[k]):10.3f}" for k in table))


def level_table(title: str, rows: Sequence[tuple[str, ResponseScore]]) -> None:
    """Per behaviour: rows labelled b / not b against the level of b."""
    print(title)
    for b in (REINF, BOUND, NEUTRAL):
        c = Counter((lab == b, s.scores[b].level) for lab, s in rows)
        for truth in (True, False):
            cells = " ".join(f"{lv} {c[(truth, lv)]:5d}" for lv in ("low", "medium", "high"))
            print(f"  {b:26s} labelled {'yes' if truth else 'no ':3s}  {cells}")


def print_confusion(held: Held, shipped: list[ResponseScore], data: DevData) -> None:
    cols = ("reinforcing", "boundary", "mixed", "neutral")
    print("\nprimary label, LOMO pooled (rows: dev label; columns: predicted)")
    print(f"{'':12s}" + "".join(f"{c:>12s}" for c in cols))
    counts = Counter((PRIMARY[lab], str(s.primary)) for _, lab, s in held)
    for t in ("reinforcing", "boundary", "neutral"):
        print(f"{t:12s}" + "".join(f"{counts[(t, c)]:12d}" for c in cols))
    for m in sorted({m for m, _, _ in held}):
        rows = [(lab, s) for mm, lab, s in held if mm == m]
        level_table(f"\nlevel per behaviour, {m} held out (its fold's cut points):", rows)
    level_table(
        "\nlevel per behaviour, shipped params and cut points, in-sample:",
        list(zip(data.labels, shipped, strict=True)),
    )


def compare_params(fitted: dict[str, object], shipped: dict[str, object]) -> float:
    """Largest absolute difference between two params dumps (numbers only)."""
    worst = 0.0
    for key in ("head_w", "head_v", "head_b", "nf_lambda", "centroids", "thresholds"):
        a, b = fitted[key], shipped[key]
        assert isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys(), key
        for k in a:
            diff = np.abs(np.subtract(a[k], b[k], dtype=np.float64))
            worst = max(worst, float(diff.max(initial=0.0)))
    for key in ("intensity_w", "intensity_b"):
        diff = np.abs(np.subtract(fitted[key], shipped[key], dtype=np.float64))  # type: ignore[arg-type]
        worst = max(worst, float(np.max(diff, initial=0.0)))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=Path, default=DEV)
    ap.add_argument("--graded", type=Path, default=GRADED)
    ap.add_argument("--check-params", action="store_true")
    ap.add_argument("--emb-cache", type=Path, default=None,
                    help="directory for the dev sets' embeddings (.npy, numbers only)")  # fmt: skip
    args = ap.parse_args()
    cfg, t0 = AffectConfig(), time.perf_counter()
    data: DevData = cached(args.dev, args.emb_cache, load_dev, cfg)  # type: ignore[assignment]
    graded: GradedData = cached(args.graded, args.emb_cache, load_graded, cfg)  # type: ignore[assignment]
    cents = centroids_of(cfg)
    print(f"dev sets: {len(data.items)} labelled, {len(graded.items)} graded rows, "
          f"features and embeddings {time.perf_counter() - t0:.1f} s")  # fmt: skip
    print("leave one model out:")
    names, rows, pairs = lomo(data, graded, cents, cfg)
    print("held out by setting:")
    table, pooled = grading(data, graded, cents, cfg)
    print_classes(names, rows)
    print_grading(table, pooled, graded)
    shipped = score(default_params(), cfg, data)
    print_confusion(pairs, shipped, data)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    if args.check_params:
        full = fit_params(data, cents, cfg, graded=graded).model_dump(mode="json")
        worst = compare_params(full, default_params().model_dump(mode="json"))
        print(f"refit vs shipped params: max |difference| {worst:.2e} (tolerance 1e-3)")
        print("params reproduced" if worst <= 1e-3 else "PARAMS DIFFER from the shipped file")


if __name__ == "__main__":
    main()
