"""Curation: pure functions over alignments (phenomena, derivation, filters, splits, GLEU,
readability). No database access here; ``curation.services.export`` feeds them plain data."""
