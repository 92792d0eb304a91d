"""Benchmark of the affect measure on this machine (CPU only).

Prints: model load time (import + weights, in a fresh process), the raw throughput of
all-MiniLM-L6-v2 on exactly the texts the scorer embeds, the scorer's throughput in
responses/s and texts/s, and the overhead of everything that is not embedding: the time a
scoring call spends outside the embedder, as a share of the raw embedding time.

    .venv/bin/python benchmarks/bench_affect.py [--repeat 5] [--copies 4]

The responses are the project's labelled set; ``--copies`` makes each copy distinct (a
numbered suffix per sentence) so that nothing is served from the scorer's per-call caches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

_LOAD_SNIPPET = """
import json, time
t0 = time.perf_counter()
from intima.affect.embed import MiniLMEmbedder
e = MiniLMEmbedder()
e.load()
t1 = time.perf_counter()
e.encode(["warm-up"])
print(json.dumps({"load_s": t1 - t0, "first_encode_s": time.perf_counter() - t1}))
"""


class TimedEmbedder:
    """Wraps the embedder to measure the time spent embedding inside a scoring call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0

    def encode(self, sentences: Any) -> Any:
        t = time.perf_counter()
        out = self.inner.encode(sentences)
        self.seconds += time.perf_counter() - t
        return out


def model_load_seconds() -> dict[str, float]:
    """Import + load in a fresh interpreter (what a user waits for once per process)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [sys.executable, "-c", _LOAD_SNIPPET], capture_output=True, text=True, env=env, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def items(copies: int) -> list[object]:
    from intima.affect.labelled import load_labelled
    from intima.affect.measure import AffectInput
    from intima.affect.text import split_sentences

    out = []
    for k in range(copies):
        for ex in load_labelled():
            sentences = split_sentences(ex.response)
            text = " ".join(f"{s} ({k})" if copies > 1 else s for s in sentences)
            out.append(AffectInput(response_id=f"{ex.id}-{k}", prompt=ex.prompt, response=text))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()

    from intima.affect.embed import default_embedder
    from intima.affect.measure import AffectScorer
    from intima.affect.text import split_sentences

    load = model_load_seconds()
    batch = items(args.copies)
    texts = [s for it in batch for s in split_sentences(it.response)]  # type: ignore[attr-defined]
    texts += [it.prompt for it in batch]  # type: ignore[attr-defined]
    distinct = list(dict.fromkeys(texts))
    n_sentences = len({s for it in batch for s in split_sentences(it.response)})  # type: ignore[attr-defined]

    from intima.affect import lexicons

    embedder = TimedEmbedder(default_embedder())
    scorer = AffectScorer(embedder=embedder)
    scorer.score(batch[:4])  # load the model and lexicons, embed the exemplars
    raw, full, inside = [], [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        embedder.inner.encode(distinct)
        raw.append(time.perf_counter() - t)
        # Cold per-text caches, so every sentence is analysed as if new.
        lexicons.vader().cache_clear()  # type: ignore[attr-defined]
        lexicons.nrc_tags.cache_clear()
        embedder.seconds = 0.0
        t = time.perf_counter()
        scorer.score(batch)
        full.append(time.perf_counter() - t)
        inside.append(full[-1] - embedder.seconds)
    t_raw, t_full = statistics.median(raw), statistics.median(full)
    t_rest = statistics.median(inside)
    import torch

    report = {
        "cpu_threads": torch.get_num_threads(),
        "responses": len(batch),
        "distinct_response_sentences": n_sentences,
        "distinct_texts_embedded": len(distinct),
        "model_load_s": round(load["load_s"], 2),
        "first_encode_s": round(load["first_encode_s"], 3),
        "raw_minilm_sentences_per_s": round(len(distinct) / t_raw, 1),
        "scorer_responses_per_s": round(len(batch) / t_full, 1),
        "scorer_texts_per_s": round(len(distinct) / t_full, 1),
        "non_embedding_s": round(t_rest, 3),
        "overhead_pct_of_raw_embedding": round(100 * t_rest / t_raw, 1),
        "scorer_vs_raw_wall_pct": round(100 * (t_full - t_raw) / t_raw, 1),
        "median_raw_s": round(t_raw, 3),
        "median_scorer_s": round(t_full, 3),
    }
    for key, value in report.items():
        print(f"{key:32s} {value}")


if __name__ == "__main__":
    main()
