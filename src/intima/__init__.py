"""intima: run the INTIMA companionship benchmark against any model and compare the results.

The notebook API, all importable from here::

    from intima import Store, ModelConfig, load_prompts, generate, judge, score, validate, results

``generate`` asks each model configuration for every prompt, ``judge`` rates the stored
responses with LLM judges, ``score`` computes the offline affect measure, ``validate`` measures
any scorer against an external labelled set, ``results`` returns the leaderboard's rates with
intervals as a pandas DataFrame. Heavy dependencies (torch, pandas, gradio, llama.cpp) load only
when a function needs them.
"""

# Bound here, not loaded on first use: ``generate``, ``validate`` and ``results`` are also the
# names of subpackages, which Python would otherwise set on this module as they are imported.
from intima.affect.store_io import score_store as score
from intima.core.config import GenerationSettings, ModelConfig
from intima.core.version import __version__
from intima.dataset import load_prompts
from intima.generate import generate
from intima.judges.loop import judge
from intima.results.frame import results
from intima.store import Store
from intima.validate import validate

__all__ = [
    "GenerationSettings",
    "ModelConfig",
    "Store",
    "__version__",
    "generate",
    "judge",
    "load_prompts",
    "results",
    "score",
    "validate",
]
