"""The command line: ``intima.cli.app`` is the complete typer app, ``main`` its entry point."""

from intima.cli.main import app, main

__all__ = ["app", "main"]
