"""Document-pair JSONL (``../shared/formats.md``): one document pair per line, grouped into articles.

A line's pair belongs to the article named by its optional ``article`` field; lines without
one are grouped by shared text: two lines whose documents share a sentence of at least
``SHARED_MIN_TOKENS`` tokens are one article group (OneStopEnglish's ``exercise_advint`` and
``exercise_intele`` share the intermediate text), so splits by article never separate them.
A line that shares nothing is an article of its own (slug = its pair id, documents ``complex``
level 0 and ``simple`` level 1, as before grouping existed). In a group of several lines
identical documents are stored once, the documents are ordered by the pairs (every complex
document gets a lower level than its simple one; labels ``0``, ``1``, ...), the slug is the
``article`` field (made slug-safe) or else the first pair id, each line keeps its pair id.

The file is read twice, one line at a time (never whole): the first pass checks every line and
groups them (it keeps one small hash per sentence), the second yields each article as soon as
its last line has been read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment_engine.ids import pair_id_problem
from alignment_engine.text import count_tokens
from curation.importers.reading import control_problem, length_problem, make_slug, read_utf8_lines
from curation.importers.types import (
    Expected,
    ImportFailed,
    ImportOptions,
    ParsedAlignment,
    ParsedArticle,
    ParsedDocument,
)
from curation.importers.writer import column_max
from curation.models import Article, Document

SHARED_MIN_TOKENS = 4  # shorter sentences ("Yes.", "Photo: AP") do not join two articles
# the column widths (as the writer checks them), read from the models, not written again here
TITLE_MAX = min(column_max(Article, "title"), column_max(Document, "title"))
ARTICLE_MAX = column_max(Article, "slug")


@dataclass
class Line:
    number: int
    pair_id: str
    article: str | None
    complex: list[list[str]]
    simple: list[list[str]]
    complex_title: str
    simple_title: str


def _paragraphs(value: object, path: Path, line: int, key: str) -> list[list[str]]:
    if not isinstance(value, list):
        raise ImportFailed(path, line, f"field {key!r} must be a list of paragraphs")
    paragraphs: list[list[str]] = []
    for p, para in enumerate(value):
        if not isinstance(para, list) or not all(isinstance(s, str) for s in para):
            raise ImportFailed(path, line, f"{key}[{p}] must be a list of sentence strings")
        cleaned = [" ".join(s.split()) for s in para]
        if not all(cleaned):
            raise ImportFailed(path, line, f"{key}[{p}] holds an empty sentence")
        if not cleaned:
            raise ImportFailed(path, line, f"{key}[{p}] is an empty paragraph")
        if control_problem("\n".join(cleaned)):  # one search per paragraph; the sentence is named below
            for s, sentence in enumerate(cleaned):
                problem = control_problem(sentence)
                if problem:
                    raise ImportFailed(path, line, f"{key}[{p}][{s}]: {problem}")
        paragraphs.append(cleaned)
    return paragraphs


def _text_field(obj: dict[str, Any], key: str, limit: int, path: Path, number: int) -> str:
    value = obj.get(key)
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise ImportFailed(path, number, f"field {key!r} must be a string")
    problem = control_problem(value) or length_problem(value, limit, key)
    if problem:
        raise ImportFailed(path, number, f"{key}: {problem}")
    return value


def read_line(path: Path, number: int, text: str, options: ImportOptions) -> Line:
    """One checked line (every problem names ``file:line``)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFailed(path, number, f"not valid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ImportFailed(path, number, "JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise ImportFailed(path, number, "each line must be a JSON object")
    missing = [k for k in ("pair_id", "complex", "simple") if k not in obj]
    if missing:
        raise ImportFailed(path, number, f"missing field(s): {', '.join(missing)}")
    pair_id = obj["pair_id"]
    problem = pair_id_problem(str(pair_id)) if isinstance(pair_id, str | int) and not isinstance(pair_id, bool) else "a pair id must be a string"
    if problem:
        raise ImportFailed(path, number, f"bad pair_id {str(pair_id)[:60]!r} ({problem})")
    language = obj.get("language")
    if language is not None and language != options.language:
        raise ImportFailed(path, number, f"language {str(language)[:20]!r} differs from the corpus language {options.language!r}")
    article = obj.get("article")
    if article is not None:
        if not isinstance(article, str | int) or isinstance(article, bool) or not str(article).strip():
            raise ImportFailed(path, number, "field 'article' must be a non-empty string")
        article = str(article)
        problem = control_problem(article) or length_problem(article, ARTICLE_MAX, "article")
        if problem:
            raise ImportFailed(path, number, f"article: {problem}")
    return Line(
        number=number,
        pair_id=str(pair_id),
        article=article,
        complex=_paragraphs(obj["complex"], path, number, "complex"),
        simple=_paragraphs(obj["simple"], path, number, "simple"),
        complex_title=_text_field(obj, "complex_title", TITLE_MAX, path, number),
        simple_title=_text_field(obj, "simple_title", TITLE_MAX, path, number),
    )


def long_enough(sentence: str) -> bool:
    """``count_tokens(sentence) >= SHARED_MIN_TOKENS``, mostly without the regular expression.

    Every whitespace-separated chunk holds at least one token (a word or a punctuation mark),
    so a sentence of ``SHARED_MIN_TOKENS`` chunks is long enough; only shorter ones are counted."""
    return sentence.count(" ") + 1 >= SHARED_MIN_TOKENS or count_tokens(sentence) >= SHARED_MIN_TOKENS


class _Groups:
    """Union-find over line indices."""

    def __init__(self) -> None:
        self.parent: list[int] = []

    def add(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _lines(path: Path, options: ImportOptions) -> Iterator[Line]:
    for number, text in read_utf8_lines(path):
        if text.strip():
            yield read_line(path, number, text, options)


def group_lines(path: Path, options: ImportOptions) -> list[int]:
    """First pass: every line checked; the group (first line index) of each non-blank line."""
    groups = _Groups()
    by_text: dict[int, int] = {}  # hash of a sentence -> a line holding it
    by_article: dict[str, int] = {}
    pair_lines: dict[str, int] = {}
    for index, line in enumerate(_lines(path, options)):
        groups.add()
        if line.pair_id in pair_lines:
            raise ImportFailed(path, line.number, f"pair id {line.pair_id!r} also on line {pair_lines[line.pair_id]}")
        pair_lines[line.pair_id] = line.number
        if line.article is not None:
            groups.union(by_article.setdefault(line.article, index), index)
            continue
        for paragraphs in (line.complex, line.simple):
            for para in paragraphs:
                for sentence in para:
                    if long_enough(sentence):
                        groups.union(by_text.setdefault(hash(sentence), index), index)
    return [groups.find(i) for i in range(len(groups.parent))]


def _document_order(path: Path, lines: list[Line], n_docs: int, edges: list[tuple[int, int]]) -> list[int]:
    """A level per document: complex before simple in every pair (longest path), ties by first use."""
    depth = [0] * n_docs
    incoming = [0] * n_docs
    out: list[list[int]] = [[] for _ in range(n_docs)]
    for c, s in edges:
        out[c].append(s)
        incoming[s] += 1
    ready = [d for d in range(n_docs) if incoming[d] == 0]
    seen = 0
    while ready:
        d = ready.pop()
        seen += 1
        for s in out[d]:
            depth[s] = max(depth[s], depth[d] + 1)
            incoming[s] -= 1
            if incoming[s] == 0:
                ready.append(s)
    if seen < n_docs:
        numbers = ", ".join(str(line.number) for line in lines)
        raise ImportFailed(path, lines[0].number, f"the pairs of lines {numbers} make a document both more and less complex than another")
    order = sorted(range(n_docs), key=lambda d: (depth[d], d))
    level = [0] * n_docs
    for position, d in enumerate(order):
        level[d] = position
    return level


def build_article(path: Path, lines: list[Line]) -> ParsedArticle:
    """One article from the lines of one group (see the module docstring)."""
    first = lines[0]
    if len(lines) == 1 and first.article is None:
        complex_doc = ParsedDocument(0, "complex", first.complex, first.complex_title)
        simple_doc = ParsedDocument(1, "simple", first.simple, first.simple_title)
        return ParsedArticle(
            slug=first.pair_id, title=first.complex_title or first.pair_id, source=f"{path.name}:{first.number}",
            documents=[complex_doc, simple_doc], pairs=[(0, 1, first.pair_id)],
        )
    docs: list[tuple[list[list[str]], str]] = []
    index_of: dict[str, int] = {}
    edges: list[tuple[int, int]] = []
    pair_of: dict[tuple[int, int], int] = {}

    def document(paragraphs: list[list[str]], title: str, avoid: int | None = None) -> int:
        key = json.dumps(paragraphs, ensure_ascii=False)
        found = index_of.get(key)
        if found is not None and found != avoid:
            return found
        docs.append((paragraphs, title))
        if found is None:
            index_of[key] = len(docs) - 1
        return len(docs) - 1

    for line in lines:
        c = document(line.complex, line.complex_title)
        s = document(line.simple, line.simple_title, avoid=c)
        if (c, s) in pair_of:  # the same two texts under another pair id: stored as copies of their own
            docs.extend([(line.complex, line.complex_title), (line.simple, line.simple_title)])
            c, s = len(docs) - 2, len(docs) - 1
        pair_of[(c, s)] = line.number
        edges.append((c, s))
    level = _document_order(path, lines, len(docs), edges)
    two = len(docs) == 2
    documents = [
        ParsedDocument(level[d], ("complex", "simple")[level[d]] if two else str(level[d]), paragraphs, title)
        for d, (paragraphs, title) in enumerate(docs)
    ]
    slug = make_slug(first.article) if first.article is not None else first.pair_id
    title = first.article if first.article is not None else (first.complex_title or slug)
    return ParsedArticle(
        slug=slug, title=title, source=f"{path.name}:{first.number}",
        documents=sorted(documents, key=lambda d: d.level),
        pairs=[(level[c], level[s], line.pair_id) for (c, s), line in zip(edges, lines, strict=True)],
    )


def parse(path: Path, options: ImportOptions) -> tuple[list[ParsedArticle], list[ParsedAlignment]]:
    return list(iter_articles(path, options)), []


def iter_articles(path: Path, options: ImportOptions) -> Iterator[ParsedArticle]:
    """Articles in the order of their last line, each as soon as it is complete."""
    for record in records(path, options):
        if isinstance(record, ParsedArticle):
            yield record


def records(path: Path, options: ImportOptions) -> Iterator[Expected | ParsedArticle]:
    """How many articles will come (after the grouping pass), then the articles."""
    if path.is_dir():
        raise ImportFailed(path, None, "expected a .jsonl file, got a folder")
    group = group_lines(path, options)
    yield Expected(len(set(group)))
    last: dict[int, int] = {}
    for index, root in enumerate(group):
        last[root] = index
    open_groups: dict[int, list[Line]] = {}
    for index, line in enumerate(_lines(path, options)):
        root = group[index]
        open_groups.setdefault(root, []).append(line)
        if last[root] == index:
            yield build_article(path, open_groups.pop(root))
