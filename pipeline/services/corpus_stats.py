"""Corpus statistics like Table 1 of Jiang et al. (2020): per level pair, the document pairs,
sentences and tokens of each side, and the phenomena of the aligned groups of a label source
(imported reference labels, verified labels, or an alignment run's predictions).

The table has two parts, computed separately so that neither costs a page view much:

- the **corpus part** (pairs, sentences, tokens per level pair): one aggregate query, grouped
  in the database by level pair, kept in the cache until the corpus changes (its latest
  import or its pair count);
- the **label part** (aligned pairs, phenomena, labelled pairs): the source's aligned links,
  streamed once and grouped per document pair. For an alignment run (500k predictions at
  Newsela's size) it is computed once when the run ends (:func:`store_run_stats`, called by
  ``align_corpus.update_run_progress``) and stored on ``AlignmentRun.stats`` with a
  fingerprint (the run's prediction count and the corpus's latest import); a page reads the
  stored part and recomputes it only when the fingerprint changed (or for runs older than
  the stored statistics).

Deletions (complex sentences without an aligned simple sentence) are the complex document's
sentence count minus its linked complex sentences, so no sentence list is read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, QuerySet

from curation.curate import phenomena as ph
from curation.models import (
    AlignmentLabel,
    Article,
    Corpus,
    Document,
    DocumentPair,
    ImportRecord,
    ReferenceAlignment,
    Sentence,
)
from pipeline.models import AlignmentRun, PredictedAlignment

ALIGNED = [AlignmentLabel.ALIGNED.value, AlignmentLabel.PARTIAL.value]
STATS_VERSION = 1
TOTAL_KEYS = ("pairs", "complex_sentences", "simple_sentences", "complex_tokens", "simple_tokens", "aligned_pairs")


def _source_links(corpus: Corpus, source: str) -> tuple[QuerySet[Any, Any], str]:
    """The aligned links of a source (filtered, not yet narrowed to columns) and the lookup
    prefix of their (pair, complex, simple) fields."""
    if source == "reference":
        return ReferenceAlignment.objects.filter(pair__corpus=corpus, label__in=ALIGNED), ""
    if source == "verified":
        from annotation.models import VerifiedLabel

        return VerifiedLabel.objects.filter(candidate__pair__corpus=corpus, label__in=ALIGNED), "candidate__"
    if source.startswith("run:"):
        return PredictedAlignment.objects.filter(run_id=int(source[4:]), run__corpus=corpus, label__in=ALIGNED), ""
    raise ValueError(f"unknown label source {source!r}")


def _level_key(complex_level: int, simple_level: int) -> str:
    return f"{complex_level}-{simple_level}"


def corpus_part(corpus: Corpus) -> dict[str, dict[str, Any]]:
    """Per level pair: labels, document pairs, sentences and tokens of each side (one query)."""
    sentence, document, article, pair = (m._meta.db_table for m in (Sentence, Document, Article, DocumentPair))
    sql = f"""
        WITH dc AS (
            SELECT s.document_id AS doc, COUNT(*) AS n, COALESCE(SUM(s.token_count), 0) AS t
            FROM {sentence} s JOIN {document} d ON d.id = s.document_id JOIN {article} a ON a.id = d.article_id
            WHERE a.corpus_id = %s GROUP BY s.document_id)
        SELECT cd.level, sd.level, MIN(cd.level_label), MIN(sd.level_label), COUNT(*),
               COALESCE(SUM(c.n), 0), COALESCE(SUM(c.t), 0), COALESCE(SUM(x.n), 0), COALESCE(SUM(x.t), 0)
        FROM {pair} p JOIN {document} cd ON cd.id = p.complex_id JOIN {document} sd ON sd.id = p.simple_id
        LEFT JOIN dc c ON c.doc = p.complex_id LEFT JOIN dc x ON x.doc = p.simple_id
        WHERE p.corpus_id = %s GROUP BY cd.level, sd.level"""  # noqa: S608 - table names from model metadata
    rows: dict[str, dict[str, Any]] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, [corpus.pk, corpus.pk])
        for cl, sl, clabel, slabel, n_pairs, cn, ct, sn, st in cursor.fetchall():
            key = _level_key(cl, sl)
            rows[key] = {"levels": key, "labels": f"{clabel} → {slabel}", "pairs": int(n_pairs),
                         "complex_sentences": int(cn), "simple_sentences": int(sn),
                         "complex_tokens": int(ct), "simple_tokens": int(st)}
    return rows


CORPUS_PART_TIMEOUT_S = 7 * 24 * 3600


def cached_corpus_part(corpus: Corpus) -> dict[str, dict[str, Any]]:
    """:func:`corpus_part` through the cache (1.1 s at Newsela's size under load), keyed by the
    corpus (pk and creation time), its latest import and its pair count: an import or a
    removed pair makes a new key."""
    n_pairs = DocumentPair.objects.filter(corpus=corpus).count()
    key = (f"corpus-stats:{STATS_VERSION}:{corpus.pk}:{corpus.created_at.timestamp()}:"
           f"{_corpus_version(corpus.pk)}:{n_pairs}")
    rows = cache.get(key)
    if rows is None:
        rows = corpus_part(corpus)
        cache.set(key, rows, CORPUS_PART_TIMEOUT_S)
    return rows


def label_part(corpus: Corpus, source: str) -> dict[str, Any]:
    """Aligned pairs and phenomena per level pair, and the number of labelled document pairs."""
    links_qs, prefix = _source_links(corpus, source)
    labelled = links_qs.order_by().values_list(f"{prefix}pair_id", flat=True).distinct()
    pair_info = {
        pk: (_level_key(cl, sl), c_doc)
        for pk, cl, sl, c_doc in DocumentPair.objects.filter(corpus=corpus, pk__in=labelled).values_list(
            "pk", "complex__level", "simple__level", "complex_id")
    }
    complex_counts = dict(
        Sentence.objects.filter(document_id__in={c_doc for _, c_doc in pair_info.values()}).order_by()
        .values_list("document_id").annotate(n=Count("pk"))
    )
    aligned: Counter[str] = Counter()
    phenomena: defaultdict[str, Counter[str]] = defaultdict(Counter)
    labelled_pairs = 0
    rows = links_qs.order_by(f"{prefix}pair_id").values_list(
        *(f"{prefix}{name}" for name in ("pair_id", "complex_id", "simple_id", "complex__text", "simple__text")))
    for pair_pk, links, texts in _pairs_of(rows.iterator(chunk_size=5000)):
        info = pair_info.get(pair_pk)
        if info is None:
            continue
        key, c_doc = info
        labelled_pairs += 1
        aligned[key] += len(links)
        groups = ph.classify(links, texts)
        linked = {c for group in groups for c in group.complex}
        for group in groups:
            phenomena[key][group.phenomenon.value] += 1
        phenomena[key][ph.Phenomenon.DELETION.value] += complex_counts.get(c_doc, 0) - len(linked)
    return {"aligned_pairs": dict(aligned), "phenomena": {k: dict(v) for k, v in phenomena.items()},
            "labelled_pairs": labelled_pairs}


def _pairs_of(rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[int, list[tuple[Any, Any]], dict[Any, str]]]:
    """Group links ordered by pair into (pair pk, links, texts) per document pair."""
    current: int | None = None
    links: list[tuple[Any, Any]] = []
    texts: dict[Any, str] = {}
    for pair_pk, c_pk, s_pk, ctext, stext in rows:
        if pair_pk != current:
            if current is not None:
                yield current, links, texts
            current, links, texts = pair_pk, [], {}
        links.append((("c", c_pk), ("s", s_pk)))
        texts[("c", c_pk)] = ctext
        texts[("s", s_pk)] = stext
    if current is not None:
        yield current, links, texts


def _corpus_version(corpus_id: int) -> int:
    """The corpus's latest import (imports are what change its documents)."""
    return ImportRecord.objects.filter(corpus_id=corpus_id).order_by("-pk").values_list("pk", flat=True).first() or 0


def _fingerprint(run: AlignmentRun) -> list[int]:
    return [STATS_VERSION, run.prediction_count, _corpus_version(run.corpus_id)]


def store_run_stats(run: AlignmentRun) -> dict[str, Any]:
    """Compute the run's label part and store it with its fingerprint (when the run ends)."""
    run.refresh_from_db(fields=["prediction_count"])
    fingerprint = _fingerprint(run)
    part = label_part(run.corpus, f"run:{run.pk}")
    run.stats = {"fingerprint": fingerprint, **part}
    AlignmentRun.objects.filter(pk=run.pk).update(stats=run.stats)
    cached_corpus_part(run.corpus)  # the statistics page's other half, ready for its first view
    return part


def run_label_part(run: AlignmentRun) -> dict[str, Any]:
    """The stored label part if still current, else recomputed and stored (older runs)."""
    stored = run.stats or {}
    if stored.get("fingerprint") == _fingerprint(run):
        return {k: stored[k] for k in ("aligned_pairs", "phenomena", "labelled_pairs")}
    return store_run_stats(run)


def corpus_table(corpus: Corpus, source: str = "reference") -> dict[str, Any]:
    if source.startswith("run:"):
        run = AlignmentRun.objects.filter(pk=int(source[4:]), corpus=corpus).first()
        if run is None:
            raise ValueError(f"unknown label source {source!r}: no such run of {corpus}")
        labels = run_label_part(run)
    else:
        labels = label_part(corpus, source)
    rows = cached_corpus_part(corpus)
    table = []
    for key in sorted(rows, key=lambda k: tuple(int(x) for x in k.split("-"))):
        row = rows[key]
        row["aligned_pairs"] = labels["aligned_pairs"].get(key, 0)
        counts = labels["phenomena"].get(key, {})
        row["phenomena"] = {name: counts.get(name, 0) for name in ph.PHENOMENA_ORDER}
        row["avg_complex_tokens"] = round(row["complex_tokens"] / row["complex_sentences"], 1) if row["complex_sentences"] else 0
        row["avg_simple_tokens"] = round(row["simple_tokens"] / row["simple_sentences"], 1) if row["simple_sentences"] else 0
        table.append(row)
    totals: defaultdict[str, int] = defaultdict(int)
    for row in table:
        for k in TOTAL_KEYS:
            totals[k] += row[k]
    return {"rows": table, "totals": dict(totals), "labelled_pairs": labels["labelled_pairs"], "source": source,
            "phenomena_order": ph.PHENOMENA_ORDER}
