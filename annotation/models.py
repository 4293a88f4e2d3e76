"""Annotation models (issue 4)."""
