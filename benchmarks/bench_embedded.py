"""The embedded model through ``intima run`` against the raw library on the same prompts.

Two pairs: llama-cpp-python (``llamacpp``) and transformers (``transformers:smollm2``, the
demo's path, which batches greedy requests where the raw loop answers one at a time). Every side
loads the bundled SmolLM2-135M GGUF, answers the same demo prompts greedily with the same token
budget, and is timed from before the model loads to the last token, each in its own child
process so that peak memory (ru_maxrss) is its own.

    .venv/bin/python benchmarks/bench_embedded.py [--prompts 24] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import os
import tempfile

from _child import run_child

RAW = """
import json, time
from llama_cpp import Llama
from intima.dataset import load_prompts
from intima.providers.bundled import bundled_gguf
from intima.providers.llamacpp import N_CTX
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

RAW_TRANSFORMERS = """
import json, time, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from intima.dataset import load_prompts
from intima.providers.bundled import bundled_gguf
path = bundled_gguf()
prompts = load_prompts("demo").prompts[:{n}]
start = time.perf_counter()
tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
tokens = 0
for p in prompts:
    enc = tok.apply_chat_template([{{"role": "user", "content": p.text}}], return_dict=True,
                                  add_generation_prompt=True, return_tensors="pt")
    out = model.generate(**enc, max_new_tokens={m}, do_sample=False)
    new = out[0, enc["input_ids"].shape[1]:].tolist()
    tokens += new.index(tok.eos_token_id) if tok.eos_token_id in new else len(new)
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
cfg = ModelConfig(spec={spec!r}, generation=settings)
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
    sides = (
        ("raw llama-cpp-python", RAW, ""),
        ("intima run (llamacpp)", INTIMA, "llamacpp"),
        ("raw transformers", RAW_TRANSFORMERS, ""),
        ("intima run (transformers)", INTIMA, "transformers:smollm2"),
    )
    with tempfile.TemporaryDirectory() as tmp:
        # An empty GGUF cache: intima's side converts the GGUF as the raw side does, so both
        # time the same work (a later start reads the cache instead; see gguf_cache).
        os.environ["INTIMA_CACHE_DIR"] = f"{tmp}/cache"
        for name, template, spec in sides:
            code = template.format(
                n=args.prompts, m=args.max_tokens, db=f"{tmp}/{len(rows)}.db", spec=spec
            )
            rows.append((name, run_child(code)))
    print(f"{'':26} {'tokens':>7} {'seconds':>8} {'tok/s':>7} {'peak MB':>8}")
    for name, r in rows:
        print(f"{name:26} {r['tokens']:>7.0f} {r['seconds']:>8.2f} "
              f"{r['tokens'] / r['seconds']:>7.1f} {r['peak_mb']:>8.0f}")  # fmt: skip
    rate = [r["tokens"] / r["seconds"] for _, r in rows]
    print(
        f"intima / raw tokens per second: llama.cpp {rate[1] / rate[0]:.2f}, "
        f"transformers {rate[3] / rate[2]:.2f}"
    )


if __name__ == "__main__":
    main()
