"""Pool export: the simple sentences of the corpus (10-40 words by default), deduplicated, as
input for back-translation."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from alignment_engine.text import words
from curation.models import DocumentPair, Sentence
from pipeline.exports.card import Stats, build_card
from pipeline.exports.parameters import Params
from pipeline.exports.writers import EXTENSIONS, columns, open_writer
from pipeline.jobs import ProgressRecorder
from pipeline.models import ExportedDataset


def export_pool(dataset: ExportedDataset, params: Params, folder: Path, tracker: ProgressRecorder) -> dict[str, Any]:
    """Simple sentences of 10-40 words (configurable), deduplicated, from the simple side of the corpus.

    Sorted by text in the database, so duplicates are adjacent and dropped in constant memory."""
    simple_docs = DocumentPair.objects.filter(corpus=dataset.corpus).values("simple_id")
    qs = (
        Sentence.objects.filter(document_id__in=simple_docs)
        .order_by("text", "document__article__slug", "document__level", "doc_position")
        .values_list("text", "document__article__slug", "document__level", "paragraph_position", "position")
    )
    ext = EXTENSIONS[params.format]
    writer = open_writer(params.format, folder / f"pool.{ext}", columns("text", "article", ("level", "int"), "sentence", ("words", "int")),
                         batch_size=params.batch_size)
    stats = Stats()
    counts = Counter[str]()
    previous: str | None = None
    try:
        for text, slug, level, p, s in qs.iterator(chunk_size=params.chunk_size):
            tracker.step()
            counts["seen"] += 1
            n = len(words(text))
            if n < params.min_words or n > params.max_words:
                counts["length"] += 1
                continue
            key = " ".join(text.split())
            if key == previous:
                counts["duplicate"] += 1
                continue
            previous = key
            writer.write({"text": key, "article": slug, "level": level, "sentence": f"{p}-{s}", "words": n})
            stats.rows_by_split["pool"] += 1
            stats.simple_tokens["pool"] += n
        tracker.finish()
        files = [writer.close()]
    except BaseException:
        writer.abort()
        raise
    source = {"pool": {"min_words": params.min_words, "max_words": params.max_words, "seen": counts["seen"],
                       "removed_length": counts["length"], "removed_duplicate": counts["duplicate"]}}
    return build_card(dataset, params, stats, files, [], source, {})
