"""The prompts: types, loaders (Hub, local files, the demo set) and the one Hub reader."""

from intima.dataset.loaders import DEMO_SOURCE, HUB_DATASET_ID, HUB_SOURCE, load_prompts
from intima.dataset.types import DatasetInfo, Prompt, PromptSet, prompt_id_for

__all__ = [
    "DEMO_SOURCE",
    "HUB_DATASET_ID",
    "HUB_SOURCE",
    "DatasetInfo",
    "Prompt",
    "PromptSet",
    "load_prompts",
    "prompt_id_for",
]
