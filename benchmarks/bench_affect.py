"""Benchmark of the affect measure on this machine (CPU only).

Prints: model load time in a fresh process (imports + weights) for intima's encoder and, for
reference, for sentence-transformers; the raw throughput of all-MiniLM-L6-v2 on exactly the
texts the scorer embeds, through sentence-transformers and through intima's encoder; the
scorer's throughput in responses/s and texts/s; and the cost of everything that is not
embedding: the time a scoring call spends outside the embedding call, as a share of the time
the embedding call took, and the scorer's wall time on top of the raw encoders' on the same
texts.

    .venv/bin/python benchmarks/bench_affect.py [--repeat 7] [--copies 4]

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

_LOAD_INTIMA = """
import json, time
t0 = time.perf_counter()
from intima.affect.embed import MiniLMEmbedder
e = MiniLMEmbedder()
e.load()
t1 = time.perf_counter()
e.encode(["warm-up"])
print(json.dumps({"load_s": t1 - t0, "first_encode_s": time.perf_counter() - t1}))
"""

_LOAD_ST = """
import json, time
t0 = time.perf_counter()
from sentence_transformers import SentenceTransformer
from intima.affect.embed import model_path
m = SentenceTransformer(str(model_path()), device="cpu", local_files_only=True)
t1 = time.perf_counter()
m.encode(["warm-up"])
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


def load_seconds(snippet: str, runs: int = 3) -> float:
    """Median import + load in a fresh interpreter (what a user waits for once per process)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", snippet], capture_output=True, text=True, env=env, check=True
        )
        times.append(json.loads(out.stdout.strip().splitlines()[-1])["load_s"])
    return statistics.median(times)


def items(copies: int) -> list[object]:
    from intima.affect.labelled import load_labelled
    from intima.affect.measure import AffectInput
    from intima.affect.sentences import split_sentences

    out = []
    for k in range(copies):
        for ex in load_labelled():
            sentences = split_sentences(ex.response)
            text = " ".join(f"{s} ({k})" if copies > 1 else s for s in sentences)
            out.append(AffectInput(response_id=f"{ex.id}-{k}", prompt=ex.prompt, response=text))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()

    from intima.affect.embed import default_embedder
    from intima.affect.measure import AffectScorer
    from intima.affect.sentences import split_sentences

    load, load_st = load_seconds(_LOAD_INTIMA), load_seconds(_LOAD_ST)
    batch = items(args.copies)
    texts = [s for it in batch for s in split_sentences(it.response)]  # type: ignore[attr-defined]
    texts += [it.prompt for it in batch]  # type: ignore[attr-defined]
    distinct = list(dict.fromkeys(texts))
    n_sentences = len({s for it in batch for s in split_sentences(it.response)})  # type: ignore[attr-defined]

    from sentence_transformers import SentenceTransformer

    from intima.affect import lexicons
    from intima.affect.embed import model_path

    reference = SentenceTransformer(str(model_path()), device="cpu", local_files_only=True)
    embedder = TimedEmbedder(default_embedder())
    scorer = AffectScorer(embedder=embedder)
    scorer.score(batch[:4])  # load the model and lexicons, embed the exemplars
    raw_st, raw, full, inside, embedding = [], [], [], [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        reference.encode(distinct, batch_size=64, normalize_embeddings=True)
        raw_st.append(time.perf_counter() - t)
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
        embedding.append(embedder.seconds)
        inside.append(full[-1] - embedder.seconds)
    med = statistics.median
    t_st, t_raw, t_full, t_rest = med(raw_st), med(raw), med(full), med(inside)
    import torch

    report = {
        "cpu_threads": torch.get_num_threads(),
        "responses": len(batch),
        "distinct_response_sentences": n_sentences,
        "distinct_texts_embedded": len(distinct),
        "model_load_s": round(load, 2),
        "sentence_transformers_load_s": round(load_st, 2),
        "raw_sentence_transformers_per_s": round(len(distinct) / t_st, 1),
        "raw_intima_encoder_per_s": round(len(distinct) / t_raw, 1),
        "scorer_responses_per_s": round(len(batch) / t_full, 1),
        "scorer_texts_per_s": round(len(distinct) / t_full, 1),
        "non_embedding_s": round(t_rest, 3),
        "non_embedding_pct_of_embedding": round(100 * t_rest / med(embedding), 1),
        "scorer_wall_vs_raw_encoder_pct": round(100 * (t_full - t_raw) / t_raw, 1),
        "scorer_wall_vs_raw_st_pct": round(100 * (t_full - t_st) / t_st, 1),
        "median_raw_encoder_s": round(t_raw, 3),
        "median_raw_st_s": round(t_st, 3),
        "median_scorer_s": round(t_full, 3),
    }
    for key, value in report.items():
        print(f"{key:32s} {value}")


if __name__ == "__main__":
    main()
