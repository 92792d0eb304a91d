"""Benchmark: is a scorer's error tied to response length? (issue 39, item 9)

``intima validate`` and the validation card report how a scorer's error moves with response
length (:func:`intima.validate.length.length_effect`: the slope of the error rate per
doubling of the word count, with a seeded bootstrap interval, and the error in length
quartiles). This measures it on the dev set (../shared/validation/companion-responses-dev.jsonl,
its own labels as the reference) for

* the affect measure, held out: each row's primary label from the measure fitted without its
  model (``_lomo.py``, the predictions ``bench_ppi.py --dev`` caches; the first run fits);
* the keyword baseline (``intima validate``'s floor, which needs no fit);

then checks the slope's interval by simulation: errors independent of length (true slope 0)
at error rates 0.05 and 0.3, n = 300 and 3000, word counts drawn from the dev set's own; the
interval should hold 0 at least 93% of the time. Only numbers are printed, never the set's
text. About 3 minutes on one core when the predictions are cached.

    .venv/bin/python benchmarks/bench_length.py [--sims 400] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _lomo
import _ppi_dev

from intima.store import StoredResponse
from intima.validate.length import length_effect, length_note, words
from intima.validate.scorers import keyword_scores


def dev_rows() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of the dev set, in file order: truth, the held-out measure's primary label,
    the keyword baseline's primary label, the response's words."""
    _ppi_dev.configurations()  # fits (or reads the cache of) the held-out predictions
    dev = _lomo.load()
    cached = np.load(_lomo.CACHE / f"ppi-{_ppi_dev._cache_key(dev)}.npz")
    with dev.path.open(encoding="utf-8") as fh:
        texts = [str(json.loads(line)["response"]) for line in fh if line.strip()]
    stored = [
        StoredResponse(str(i), "dev", "dev", "dev", str(i), "", "", "", t)
        for i, t in enumerate(texts)
    ]
    kw = keyword_scores(stored)
    keyword = np.array([kw[str(i)].primary for i in range(len(texts))])
    length = np.array([words(t) for t in texts])
    return np.asarray(dev.truth), cached["primary"].astype(str), keyword, length


def coverage(lengths: np.ndarray, sims: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print("\n| error rate | n | slope interval holds 0 | mean width (points per doubling) |")
    print("|---|---|---|---|")
    for rate in (0.05, 0.3):
        for n in (300, 3000):
            hit, width = 0, 0.0
            for _ in range(sims):
                w = rng.choice(lengths, size=n)
                e = rng.random(n) < rate
                eff = length_effect(e, w, b=500, seed=int(rng.integers(2**31)))
                assert eff is not None
                hit += eff["slope_lo"] <= 0.0 <= eff["slope_hi"]
                width += eff["slope_hi"] - eff["slope_lo"]
            print(f"| {rate} | {n} | {hit / sims:.3f} | {100 * width / sims:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    truth, measure, keyword, length = dev_rows()
    q = np.quantile(length, [0, 0.25, 0.5, 0.75, 1])
    print(f"dev set: {len(truth)} rows; words min {q[0]:.0f}, quartiles {q[1]:.0f} / "
          f"{q[2]:.0f} / {q[3]:.0f}, max {q[4]:.0f}")  # fmt: skip
    for name, pred in (("affect measure (held out)", measure), ("keyword baseline", keyword)):
        eff = length_effect(pred != truth, length, b=1000, seed=args.seed)
        assert eff is not None
        print(f"\n{name}: error {np.mean(pred != truth):.3f}; {length_note(eff)}")
        # Which way the errors go: reinforcing called where the label is not, and the reverse.
        over = length_effect((pred == "reinforcing") & (truth != "reinforcing"), length)
        under = length_effect((pred != "reinforcing") & (truth == "reinforcing"), length)
        assert over is not None and under is not None
        print(f"  false reinforcing: {length_note(over)}")
        print(f"  missed reinforcing: {length_note(under)}")
    coverage(length, args.sims, args.seed)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
