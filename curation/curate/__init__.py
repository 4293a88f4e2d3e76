"""Curation: pure functions over alignments (phenomena, derivation, filters, splits, GLEU,
readability). No database access here; ``pipeline.exports.run`` feeds them plain data."""
