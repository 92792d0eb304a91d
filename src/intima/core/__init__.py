"""The bottom layer: taxonomy, ratings, content ids, configuration, errors, terminal escaping.

Modules here import nothing else from intima (a test walks the imports)."""
