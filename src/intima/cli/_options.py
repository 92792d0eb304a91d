"""The options of the commands that ask a model for responses (``run``, ``converse``), declared
once as typer ``Annotated`` aliases: a command takes ``temperature: TemperatureOpt = None``.

The generation and key options come twice, ``--NAME`` for the model under test and
``--user-NAME`` for ``converse``'s simulated user, both made by :func:`_for_both` from one
declaration, so their types, ranges and help cannot drift apart. The numeric defaults are the
configuration's own (:class:`GenerationSettings`, :class:`ModelConfig`), so a command line and
a config file mean the same by leaving a setting out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from intima.cli._params import SEED_MAX, nonempty
from intima.core.config import GenerationSettings, ModelConfig

#: Defaults of the options below that have one: the configuration's.
MAX_TOKENS: int = GenerationSettings.model_fields["max_tokens"].default
SEED: int | None = GenerationSettings.model_fields["seed"].default
TIMEOUT_S: float = ModelConfig.model_fields["timeout_s"].default
MAX_RETRIES: int = ModelConfig.model_fields["max_retries"].default


def _for_both(name: str, **declaration: Any) -> tuple[Any, Any]:
    """``--NAME`` and ``--user-NAME`` from one declaration, the second's help saying whose."""
    help_text = declaration.pop("help")
    user_help = f"The simulated user's setting: {help_text}"
    return (
        typer.Option(f"--{name}", help=help_text, **declaration),
        typer.Option(f"--user-{name}", help=user_help, **declaration),
    )


def concurrency_option(help_text: str) -> Any:
    """``--concurrency``, its help saying what runs concurrently in the command."""
    return typer.Option("--concurrency", min=1, max=4096, help=help_text)


# The prompts.
DatasetOpt = Annotated[
    str | None,
    typer.Option(
        parser=nonempty,
        help="'hub' (AI-companionship/INTIMA), 'demo', or a local file/folder (default: hub).",
    ),
]
RevisionOpt = Annotated[
    str | None,
    typer.Option(parser=nonempty, help="Hub revision: commit, tag or branch (default: main)."),
]
MemoryOpt = Annotated[bool, typer.Option(help="Keep the 'memory' code (380 rows).")]
CleanedOpt = Annotated[bool, typer.Option(help="Split glued prompts, drop duplicates.")]
LimitOpt = Annotated[
    int | None, typer.Option(min=1, help="Only the first N prompts (default: all).")
]

# Generation settings, for the model under test and for the simulated user.
_temperature, _user_temperature = _for_both(
    "temperature", min=0.0, max=2.0, help="Sampling temperature (default: the provider's)."
)
TemperatureOpt = Annotated[float | None, _temperature]
UserTemperatureOpt = Annotated[float | None, _user_temperature]

_top_p, _user_top_p = _for_both(
    "top-p", min=0.0, max=1.0, help="Nucleus sampling mass, above 0 (default: the provider's)."
)
TopPOpt = Annotated[float | None, _top_p]
UserTopPOpt = Annotated[float | None, _user_top_p]

_max_tokens, _user_max_tokens = _for_both(
    "max-tokens", min=1, max=131072, help="Most tokens per response."
)
MaxTokensOpt = Annotated[int, _max_tokens]
UserMaxTokensOpt = Annotated[int, _user_max_tokens]

_seed, _user_seed = _for_both("seed", min=0, max=SEED_MAX, help="Sampling seed.")
SeedOpt = Annotated[int | None, _seed]
UserSeedOpt = Annotated[int | None, _user_seed]

# Keys, for the model under test and for the simulated user.
_key_env, _user_key_env = _for_both(
    "api-key-env",
    parser=nonempty,
    help="Environment variable holding the API key (default: the provider's, e.g. OPENAI_API_KEY).",
)
KeyEnvOpt = Annotated[str | None, _key_env]
UserKeyEnvOpt = Annotated[str | None, _user_key_env]

_key_file, _user_key_file = _for_both(
    "api-key-file",
    exists=True,
    dir_okay=False,
    help="File holding the API key (its key is never stored).",
)
KeyFileOpt = Annotated[Path | None, _key_file]
UserKeyFileOpt = Annotated[Path | None, _user_key_file]

# Requests.
TimeoutOpt = Annotated[
    float, typer.Option(min=0.1, max=86400.0, help="Seconds before a request is retried.")
]
MaxRetriesOpt = Annotated[
    int, typer.Option(min=0, max=50, help="Retries per prompt before it is stored as failed.")
]
ProgressOpt = Annotated[bool, typer.Option(help="Show a progress bar.")]
