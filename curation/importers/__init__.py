"""Importers: one parser per format, one writer for all.

- ``types``: the plain data parsers produce (``ParsedArticle``, ``ParsedAlignment``), ``ImportFailed``
  (naming file, line and problem), ``ImportOptions`` and ``ImportSummary``;
- ``reading``: decoding helpers the parsers share;
- ``jsonl_pairs``, ``leveled_text``, ``alignment_tsv``, ``deplain``: one parser per format;
  ``synthetic``: machine-made pairs (kept apart from the corpus);
- ``writer``: stores parsed data in bulk;
- ``run``: the parser registry and ``run_import`` (parse, then write in one transaction).
"""
