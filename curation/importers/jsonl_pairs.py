"""Document-pair JSONL (``../shared/formats.md``): one article with two documents per line."""

from __future__ import annotations

import json
from pathlib import Path

from alignment_engine.ids import pair_id_problem
from curation.importers.reading import read_utf8_lines
from curation.importers.types import ImportFailed, ImportOptions, ParsedAlignment, ParsedArticle, ParsedDocument


def _paragraphs(value: object, path: Path, line: int, key: str) -> list[list[str]]:
    if not isinstance(value, list):
        raise ImportFailed(path, line, f"field {key!r} must be a list of paragraphs")
    paragraphs: list[list[str]] = []
    for p, para in enumerate(value):
        if not isinstance(para, list) or not all(isinstance(s, str) for s in para):
            raise ImportFailed(path, line, f"{key}[{p}] must be a list of sentence strings")
        cleaned = [" ".join(s.split()) for s in para]
        if any(not s for s in cleaned):
            raise ImportFailed(path, line, f"{key}[{p}] holds an empty sentence")
        if not cleaned:
            raise ImportFailed(path, line, f"{key}[{p}] is an empty paragraph")
        paragraphs.append(cleaned)
    return paragraphs


def parse(path: Path, options: ImportOptions) -> tuple[list[ParsedArticle], list[ParsedAlignment]]:
    if path.is_dir():
        raise ImportFailed(path, None, "expected a .jsonl file, got a folder")
    articles: list[ParsedArticle] = []
    for number, line in read_utf8_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFailed(path, number, f"not valid JSON: {exc.msg} at column {exc.colno}") from None
        if not isinstance(obj, dict):
            raise ImportFailed(path, number, "each line must be a JSON object")
        missing = [k for k in ("pair_id", "complex", "simple") if k not in obj]
        if missing:
            raise ImportFailed(path, number, f"missing field(s): {', '.join(missing)}")
        pair_id = obj["pair_id"]
        problem = pair_id_problem(str(pair_id)) if isinstance(pair_id, str | int) else "a pair id must be a string"
        if problem:
            raise ImportFailed(path, number, f"bad pair_id {pair_id!r} ({problem})")
        pair_id = str(pair_id)
        language = obj.get("language")
        if language is not None and language != options.language:
            raise ImportFailed(path, number, f"language {language!r} differs from the corpus language {options.language!r}")
        complex_doc = ParsedDocument(0, "complex", _paragraphs(obj["complex"], path, number, "complex"), str(obj.get("complex_title") or ""))
        simple_doc = ParsedDocument(1, "simple", _paragraphs(obj["simple"], path, number, "simple"), str(obj.get("simple_title") or ""))
        articles.append(
            ParsedArticle(
                slug=pair_id,
                title=complex_doc.title or pair_id,
                source=f"{path.name}:{number}",
                documents=[complex_doc, simple_doc],
                pairs=[(0, 1, pair_id)],
            )
        )
    return articles, []
