"""The judge options every judging command shares (``judge``, ``worker --judge``, ``validate
--judge``), declared once, and the judge configurations they make."""

from __future__ import annotations

from typing import Annotated

import typer

from intima.cli._params import nonempty
from intima.core.config import (
    STRUCTURED_OUTPUT_MODES,
    GenerationSettings,
    ModelConfig,
    StructuredOutput,
)
from intima.core.errors import ConfigError

StructuredOutputOpt = Annotated[
    StructuredOutput,
    typer.Option(
        help="How the reply schema is sent to OpenAI-compatible servers: auto (try json_schema, "
        "fall back to json_object, then to none, remembered per server), json_schema (OpenAI, "
        "vLLM, Ollama), json_object (llama-cpp-python server) or off."
    ),
]
JudgeMaxTokensOpt = Annotated[
    int, typer.Option(min=1, max=131072, help="Most tokens per judge reply.")
]
MaxReasksOpt = Annotated[
    int, typer.Option(min=0, max=20, help="Times an invalid judge reply is asked again.")
]
ApiKeyEnvOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="Environment variable holding the judge's API key (default: the provider's, e.g. "
        "OPENAI_API_KEY).",
    ),
]
JudgeTimeoutOpt = Annotated[
    float,
    typer.Option(min=0.1, max=86400.0, help="Seconds before a judge request is retried."),
]
JudgeMaxRetriesOpt = Annotated[
    int, typer.Option(min=0, max=50, help="Retries per judge request before it is unscored.")
]
JudgeConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        max=4096,
        help="Judge requests in flight per judge (default: the provider's; 32 for openai-compat).",
    ),
]
DEFAULT_STRUCTURED_OUTPUT: StructuredOutput = "auto"
DEFAULT_JUDGE_MAX_TOKENS = 400
DEFAULT_JUDGE_TIMEOUT = 120.0
DEFAULT_JUDGE_MAX_RETRIES = 6


def judge_configs(
    specs: list[str],
    labels: list[str] | None,
    settings: GenerationSettings,
    *,
    structured_output: str = DEFAULT_STRUCTURED_OUTPUT,
    base_url: list[str] | None = None,
    api_key_env: str | None = None,
    concurrency: int | None = None,
    timeout: float = DEFAULT_JUDGE_TIMEOUT,
    max_retries: int = DEFAULT_JUDGE_MAX_RETRIES,
    allow_unlisted_model: bool = False,
) -> list[ModelConfig]:
    """Judge configurations from the options every judging command shares."""
    if structured_output not in STRUCTURED_OUTPUT_MODES:
        raise ConfigError("--structured-output must be auto, json_schema, json_object or off")
    if labels and len(labels) != len(specs):
        raise ConfigError(f"--label given {len(labels)} time(s) for {len(specs)} --judge option(s)")
    return [
        ModelConfig(
            spec=spec,
            label=labels[i] if labels else None,
            generation=settings,
            base_urls=tuple(base_url or ()),
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout_s=timeout,
            max_retries=max_retries,
            structured_output=structured_output,  # type: ignore[arg-type]
            allow_unlisted_model=allow_unlisted_model,
        )
        for i, spec in enumerate(specs)
    ]
