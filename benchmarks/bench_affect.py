"""Benchmark of the affect measure (v3) on this machine (CPU only).

Prints:

* **model ready**: a fresh interpreter imports ``intima.affect``, loads the parameters and the
  encoder's weights and embeds one text (median of ``--runs``; target < 5 s);
* **dev set end to end**: the 3,000 dev responses scored on all 13 categories exactly as
  ``intima score`` does (batches of 64, text features, embeddings, factors, rows), with the time
  inside the encoder split out (target < 60 s).

    .venv/bin/python benchmarks/bench_affect.py [--dev PATH] [--runs 3] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEV = (
    Path(__file__).resolve().parents[2] / "shared" / "validation" / "companion-responses-dev.jsonl"
)

_READY = """
import json, time
t0 = time.perf_counter()
from intima.affect import AffectScorer
scorer = AffectScorer()
scorer.embedder.encode(["warm-up"], max_tokens=scorer.config.embed_max_tokens)
t1 = time.perf_counter()
scorer.score_one("I'm always here for you.", "hi")
print(json.dumps({"ready_s": t1 - t0, "first_score_s": time.perf_counter() - t1}))
"""


class TimedEmbedder:
    """Wraps the embedder to measure the time spent embedding inside scoring calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0

    def encode(self, texts: Any, max_tokens: int | None = None) -> Any:
        t = time.perf_counter()
        out = self.inner.encode(texts, max_tokens=max_tokens)
        self.seconds += time.perf_counter() - t
        return out


def ready_seconds(runs: int) -> tuple[float, float]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    ready, first = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _READY], capture_output=True, text=True, env=env, check=True
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        ready.append(got["ready_s"])
        first.append(got["first_score_s"])
    return statistics.median(ready), statistics.median(first)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dev", type=Path, default=DEV)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()

    ready, first = ready_seconds(args.runs)
    from intima.affect.embed import default_embedder
    from intima.affect.measure import AffectInput, AffectScorer

    rows = [json.loads(x) for x in args.dev.read_text(encoding="utf-8").splitlines() if x]
    items = [
        AffectInput(response_id=str(i), prompt=r["messages"][-1]["content"], response=r["response"])
        for i, r in enumerate(rows[: args.limit])
    ]
    embedder = TimedEmbedder(default_embedder())
    scorer = AffectScorer(embedder=embedder)
    scorer.score(items[:2])  # model, params and lexicons loaded: not part of the timing
    embedder.seconds = 0.0
    t = time.perf_counter()
    scores = [s for k in range(0, len(items), 64) for s in scorer.score(items[k : k + 64])]
    total = time.perf_counter() - t
    import torch

    report = {
        "cpu_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "model_ready_s (target < 5)": round(ready, 2),
        "first_score_after_ready_s": round(first, 3),
        "responses": len(scores),
        "rows": sum(len(s.scores) for s in scores),
        "end_to_end_s (target < 60)": round(total, 1),
        "of_which_encoder_s": round(embedder.seconds, 1),
        "of_which_features_factors_rows_s": round(total - embedder.seconds, 1),
        "responses_per_s": round(len(scores) / total, 1),
    }
    for key, value in report.items():
        print(f"{key:38s} {value}")


if __name__ == "__main__":
    main()
