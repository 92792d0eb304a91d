"""intima: run the INTIMA companionship benchmark against any model and compare the results.

The notebook API, all importable from here::

    from intima import (Store, ModelConfig, load_prompts, generate_responses, judge_responses,
                        score_responses, load_results, validate_scorers)

``generate_responses`` asks each model configuration for every prompt, ``judge_responses``
rates the stored responses with LLM judges, ``score_responses`` computes the offline affect
measure, ``load_results`` returns the leaderboard's rates with intervals as a pandas DataFrame,
``validate_scorers`` measures any scorer against an external labelled set. Heavy dependencies
(torch, pandas, gradio, llama.cpp) load only when a function needs them.

No public name is the name of a subpackage: ``intima.generate``, ``intima.results`` and
``intima.validate`` are the packages, as ``import intima.results.table`` expects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from intima.core.version import __version__

if TYPE_CHECKING:
    from intima.affect.store_io import score_store as score_responses
    from intima.core.config import GenerationSettings, ModelConfig
    from intima.dataset import load_prompts
    from intima.generate import generate as generate_responses
    from intima.judges.loop import judge as judge_responses
    from intima.results.frame import results as load_results
    from intima.store import Store
    from intima.validate import validate as validate_scorers
else:
    # Bound on first use: every `intima ...` command imports this package first, and loading
    # the whole API here cost each command about half a second before it did anything.
    from intima.core.lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        globals(),
        {
            "GenerationSettings": "intima.core.config",
            "ModelConfig": "intima.core.config",
            "Store": "intima.store",
            "generate_responses": "intima.generate:generate",
            "judge_responses": "intima.judges.loop:judge",
            "load_prompts": "intima.dataset",
            "load_results": "intima.results.frame:results",
            "score_responses": "intima.affect.store_io:score_store",
            "validate_scorers": "intima.validate:validate",
        },
    )

__all__ = [
    "GenerationSettings",
    "ModelConfig",
    "Store",
    "__version__",
    "generate_responses",
    "judge_responses",
    "load_prompts",
    "load_results",
    "score_responses",
    "validate_scorers",
]
