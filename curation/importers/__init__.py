"""Importers: one parser per format, one writer for all.

Parsers turn a file (or folder) into plain data (``ParsedArticle``, ``ParsedAlignment``)
and raise ``ImportFailed`` naming file, line and problem. ``write_import`` stores the result
in one transaction, so a bad file leaves the database unchanged.
"""

from curation.importers.base import (
    FORMATS,
    ImportFailed,
    ImportOptions,
    ImportSummary,
    ParsedAlignment,
    ParsedArticle,
    ParsedDocument,
    run_import,
)

__all__ = [
    "FORMATS",
    "ImportFailed",
    "ImportOptions",
    "ImportSummary",
    "ParsedAlignment",
    "ParsedArticle",
    "ParsedDocument",
    "run_import",
]
