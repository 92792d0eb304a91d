"""Provider registry.

Providers are found through the ``intima.providers`` entry-point group. intima's own
providers are declared there in its ``pyproject.toml``, exactly as a plugin package would declare
its own, so built-ins get no special path. Tests and notebooks may also call :func:`register`.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from intima.core.config import ModelConfig
from intima.core.errors import ConfigError
from intima.core.escape import quoted
from intima.providers.base import (
    Completion,
    Message,
    Model,
    RequestError,
    TransientError,
    without_settings,
)

ENTRY_POINT_GROUP = "intima.providers"

_registered: dict[str, type[Model]] = {}


def register(name: str, cls: type[Model]) -> None:
    _registered[name] = cls


def provider_names() -> list[str]:
    names = set(_registered) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(names)


def provider_class(name: str) -> type[Model]:
    if name in _registered:
        return _registered[name]
    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not matches:
        raise ConfigError(
            f"unknown model provider {quoted(name)}; known providers: {', '.join(provider_names())}"
        )
    cls = matches[0].load()
    if not (isinstance(cls, type) and issubclass(cls, Model)):
        raise ConfigError(f"provider {quoted(name)} does not point at an intima Model class")
    return cls


def get_model(config: ModelConfig) -> Model:
    """Build the backend for a configuration; errors name what to fix."""
    return provider_class(config.parsed.provider)(config)


def effective_config(config: ModelConfig) -> ModelConfig:
    """The configuration as its provider sends it: settings the provider cannot honour unset.
    This is what :func:`get_model` keeps as ``model.config``; its key is the one stored."""
    cls = provider_class(config.parsed.provider)
    return without_settings(config, cls.unsupported(config.parsed.model))[0]


__all__ = [
    "Completion",
    "Message",
    "Model",
    "RequestError",
    "TransientError",
    "effective_config",
    "get_model",
    "provider_names",
    "register",
]
