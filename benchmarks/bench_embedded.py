"""The embedded model through ``intima run`` against raw llama-cpp-python on the same prompts.

Both sides load the bundled SmolLM2-135M GGUF with the same defaults, answer the same demo
prompts with the same settings, and are timed from before the model loads to the last token,
each in its own child process so that peak memory (ru_maxrss) is its own.

    .venv/bin/python benchmarks/bench_embedded.py [--prompts 24] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import tempfile

from _child import run_child

RAW = """
import json, time
from llama_cpp import Llama
from intima.dataset import load_prompts
from intima.providers.llamacpp import N_CTX, bundled_gguf
prompts = load_prompts("demo").prompts[:{n}]
start = time.perf_counter()
llm = Llama(model_path=str(bundled_gguf()), n_ctx=N_CTX, verbose=False)
tokens = 0
for p in prompts:
    out = llm.create_chat_completion(messages=[{{"role": "user", "content": p.text}}],
                                     max_tokens={m}, temperature=0.0, seed=0)
    tokens += out["usage"]["completion_tokens"]
print(json.dumps({{"tokens": tokens, "seconds": time.perf_counter() - start}}))
"""

INTIMA = """
import json, time
from intima.core.config import GenerationSettings, ModelConfig
from intima.dataset import PromptSet, load_prompts
from intima.generate import generate
from intima.store import Store
demo = load_prompts("demo")
prompts = PromptSet(info=demo.info, prompts=demo.prompts[:{n}])
settings = GenerationSettings(max_tokens={m}, temperature=0.0, seed=0)
cfg = ModelConfig(spec="llamacpp", generation=settings)
start = time.perf_counter()
with Store.open({db!r}) as store:
    [s] = generate(store, prompts, [cfg])
print(json.dumps({{"tokens": s.completion_tokens, "seconds": time.perf_counter() - start}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=24)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, template in (("raw llama-cpp-python", RAW), ("intima run", INTIMA)):
            code = template.format(n=args.prompts, m=args.max_tokens, db=f"{tmp}/{len(rows)}.db")
            r = run_child(code)
            rows.append((name, r))
    print(f"{'':22} {'tokens':>7} {'seconds':>8} {'tok/s':>7} {'peak MB':>8}")
    for name, r in rows:
        print(f"{name:22} {r['tokens']:>7.0f} {r['seconds']:>8.2f} "
              f"{r['tokens'] / r['seconds']:>7.1f} {r['peak_mb']:>8.0f}")  # fmt: skip
    raw, ours = (r["tokens"] / r["seconds"] for _, r in rows)
    print(f"intima / raw tokens per second: {ours / raw:.2f}")


if __name__ == "__main__":
    main()
