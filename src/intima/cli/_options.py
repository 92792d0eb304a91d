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
from typing import TYPE_CHECKING, Annotated, Any, Self

import typer
from pydantic import BaseModel, ConfigDict

from intima.cli._params import SEED_MAX, nonempty
from intima.core.config import GenerationSettings, ModelConfig

if TYPE_CHECKING:  # pragma: no cover
    from intima.dataset import PromptSet

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


class OptionGroup(BaseModel):
    """Options of a command that mean one thing together, as one typed object: its fields are
    named as the command's parameters (``top_p`` is ``--top-p``), so :meth:`of` reads the group
    from the parsed command line and the command hands the object on instead of re-listing
    each option."""

    model_config = ConfigDict(frozen=True)

    @classmethod
    def of(cls, ctx: typer.Context, prefix: str = "") -> Self:
        """The group as given to the command (``prefix``: ``user_`` for ``--user-NAME``)."""
        return cls.model_validate({name: ctx.params[prefix + name] for name in cls.model_fields})

    @classmethod
    def on_command_line(cls, ctx: typer.Context) -> list[str]:
        """The group's options typed on the command line (even at their default value)."""
        return [
            f"--{name.replace('_', '-')}"
            for name in cls.model_fields
            if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"
        ]


class PromptOptions(OptionGroup):
    """Which prompts: ``--dataset``, ``--revision``, ``--include-memory``, ``--cleaned``,
    ``--limit``."""

    dataset: str | None
    revision: str | None
    include_memory: bool
    cleaned: bool
    limit: int | None

    def load(self) -> PromptSet:
        from intima.dataset import load_prompts

        prompts = load_prompts(
            self.dataset,
            revision=self.revision,
            include_memory=self.include_memory,
            cleaned=self.cleaned,
        )
        return prompts.first(self.limit)


class GenerationOptions(OptionGroup):
    """``--temperature``, ``--top-p``, ``--max-tokens``, ``--seed`` (or their ``--user-``
    twins): the model's :class:`GenerationSettings`."""

    temperature: float | None
    top_p: float | None
    max_tokens: int
    seed: int | None

    def settings(self) -> GenerationSettings:
        return GenerationSettings(**self.model_dump())


class ModelOptions(OptionGroup):
    """How a command calls the model under test, besides its spec and generation settings."""

    label: str | None
    system_prompt: str | None
    api_key_env: str | None
    api_key_file: Path | None
    concurrency: int | None
    timeout: float
    max_retries: int

    def config(
        self,
        spec: str,
        generation: GenerationSettings,
        *,
        base_urls: tuple[str, ...] = (),
        allow_unlisted_model: bool = False,
    ) -> ModelConfig:
        """The configuration of ``spec`` with these options."""
        return ModelConfig(
            spec=spec,
            label=self.label,
            system_prompt=self.system_prompt,
            generation=generation,
            api_key_env=self.api_key_env,
            api_key_file=self.api_key_file,
            concurrency=self.concurrency,
            timeout_s=self.timeout,
            max_retries=self.max_retries,
            base_urls=base_urls,
            allow_unlisted_model=allow_unlisted_model,
        )
