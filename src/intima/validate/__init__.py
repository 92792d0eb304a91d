"""Measuring scorers against labels intima did not write (``intima validate``)."""

from intima.validate.run import ScorerReport, ValidationResult, ValidationSettings, validate

__all__ = ["ScorerReport", "ValidationResult", "ValidationSettings", "validate"]
