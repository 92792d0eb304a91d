"""Measuring scorers against labels intima did not write (``intima validate``)."""

from intima.validate.run import ScorerReport, ValidationResult, validate

__all__ = ["ScorerReport", "ValidationResult", "validate"]
