"""Generation: the claimed request pool (``pool``) and runs over a prompt set (``runner``)."""

from intima.generate.runner import RunSummary, agenerate, generate

__all__ = ["RunSummary", "agenerate", "generate"]
