"""Corpus statistics like Table 1 of Jiang et al. (2020): per level pair, the document pairs,
sentences and tokens of each side, and the phenomena of the aligned groups of a label source
(imported reference labels, verified labels, or an alignment run's predictions)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, QuerySet, Sum

from curation.curate import phenomena as ph
from curation.models import AlignmentLabel, Corpus, DocumentPair, ReferenceAlignment, Sentence
from pipeline.models import PredictedAlignment

ALIGNED = [AlignmentLabel.ALIGNED.value, AlignmentLabel.PARTIAL.value]


def _links(corpus: Corpus, source: str) -> Iterator[tuple[Any, ...]]:
    """(pair pk, complex pk, simple pk, complex text, simple text) of aligned pairs, ordered by pair."""
    fields = ("pair_id", "complex_id", "simple_id", "complex__text", "simple__text")
    qs: QuerySet[Any, Any]
    if source == "reference":
        qs = ReferenceAlignment.objects.filter(pair__corpus=corpus, label__in=ALIGNED).order_by("pair_id").values_list(*fields)
    elif source == "verified":
        from annotation.models import VerifiedLabel

        qs = VerifiedLabel.objects.filter(candidate__pair__corpus=corpus, label__in=ALIGNED).order_by(
            "candidate__pair_id").values_list("candidate__pair_id", "candidate__complex_id", "candidate__simple_id",
                                              "candidate__complex__text", "candidate__simple__text")
    elif source.startswith("run:"):
        qs = PredictedAlignment.objects.filter(run_id=int(source[4:]), run__corpus=corpus, label__in=ALIGNED).order_by(
            "pair_id").values_list(*fields)
    else:
        raise ValueError(f"unknown label source {source!r}")
    yield from qs.iterator(chunk_size=5000)


def corpus_table(corpus: Corpus, source: str = "reference") -> dict[str, Any]:
    pairs = list(
        DocumentPair.objects.filter(corpus=corpus).values_list("pk", "complex_id", "simple_id", "complex__level", "simple__level",
                                                             "complex__level_label", "simple__level_label")
    )
    doc_counts = {
        row["document_id"]: (row["n"], row["tokens"] or 0)
        for row in Sentence.objects.filter(document__article__corpus=corpus).values("document_id").annotate(
            n=Count("pk"), tokens=Sum("token_count"))
    }
    level_of_pair: dict[int, str] = {}
    rows: dict[str, dict[str, Any]] = {}
    for pk, c_doc, s_doc, cl, sl, clabel, slabel in pairs:
        key = f"{cl}-{sl}"
        level_of_pair[pk] = key
        row = rows.setdefault(key, {"levels": key, "labels": f"{clabel} → {slabel}", "pairs": 0, "complex_sentences": 0,
                                    "simple_sentences": 0, "complex_tokens": 0, "simple_tokens": 0, "aligned_pairs": 0,
                                    "phenomena": Counter()})
        row["pairs"] += 1
        cn, ct = doc_counts.get(c_doc, (0, 0))
        sn, st = doc_counts.get(s_doc, (0, 0))
        row["complex_sentences"] += cn
        row["simple_sentences"] += sn
        row["complex_tokens"] += ct
        row["simple_tokens"] += st
    labelled_pairs: set[int] = set()
    complex_of_pair = {pk: c_doc for pk, c_doc, *_ in pairs}
    # every complex sentence of the corpus's pairs in one query (deletions are the unlinked ones)
    sentences_of_doc: defaultdict[int, list[tuple[str, int]]] = defaultdict(list)
    for doc_pk, sentence_pk in Sentence.objects.filter(
            document_id__in=DocumentPair.objects.filter(corpus=corpus).values("complex_id")).values_list("document_id", "pk"):
        sentences_of_doc[doc_pk].append(("c", sentence_pk))
    current: int | None = None
    links: list[tuple[Any, Any]] = []
    texts: dict[Any, str] = {}

    def flush() -> None:
        if current is None or current not in level_of_pair:
            return
        labelled_pairs.add(current)
        row = rows[level_of_pair[current]]
        row["aligned_pairs"] += len(links)
        for group in ph.classify(links, texts, complex_sentences=sentences_of_doc.get(complex_of_pair[current], [])):
            row["phenomena"][group.phenomenon.value] += 1

    for pair_pk, c_pk, s_pk, ctext, stext in _links(corpus, source):
        if pair_pk != current:
            flush()
            current, links, texts = pair_pk, [], {}
        links.append((("c", c_pk), ("s", s_pk)))
        texts[("c", c_pk)] = ctext
        texts[("s", s_pk)] = stext
    flush()
    table = []
    for key in sorted(rows, key=lambda k: tuple(int(x) for x in k.split("-"))):
        row = rows[key]
        row["avg_complex_tokens"] = round(row["complex_tokens"] / row["complex_sentences"], 1) if row["complex_sentences"] else 0
        row["avg_simple_tokens"] = round(row["simple_tokens"] / row["simple_sentences"], 1) if row["simple_sentences"] else 0
        row["phenomena"] = {name: row["phenomena"].get(name, 0) for name in ph.PHENOMENA_ORDER}
        table.append(row)
    totals: defaultdict[str, int] = defaultdict(int)
    for row in table:
        for k in ("pairs", "complex_sentences", "simple_sentences", "complex_tokens", "simple_tokens", "aligned_pairs"):
            totals[k] += row[k]
    return {"rows": table, "totals": dict(totals), "labelled_pairs": len(labelled_pairs), "source": source,
            "phenomena_order": ph.PHENOMENA_ORDER}
