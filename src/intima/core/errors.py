"""Errors meant for users: each message names what to fix. The CLI prints them as one line."""

from __future__ import annotations


class IntimaError(Exception):
    """Base for errors whose message is fit to show a user as is."""


class DatasetError(IntimaError):
    """The prompt source is missing, unreadable or has bad rows."""


class ConfigError(IntimaError):
    """A model spec, config file or price table is invalid."""


class ProviderError(IntimaError):
    """A model provider failed in a way that retrying will not fix (auth, unknown model, down)."""


class StoreError(IntimaError):
    """The results store cannot be opened or is from a newer intima."""
