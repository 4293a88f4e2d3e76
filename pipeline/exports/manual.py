"""Manual export: verified labels (plus imported reference labels and links derived for
non-adjacent levels) one article at a time, the raw judgments and aggregated labels beside them
(annotators pseudonymised), and the agreement of each labeling job."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from django.db.models import Count

from accounts.pseudonyms import pseudonym
from alignment_engine.ids import COMPLEX, SIMPLE, sentence_id
from annotation.agreement import LABEL_CODE, LABELS, krippendorff_alpha_nominal
from annotation.models import AggregatedLabel, Judgment, LabelingJob, VerifiedLabel
from annotation.services.ledger import job_ledger
from curation.curate.derive import LevelLink, derive_links
from curation.curate.phenomena import classify_rows
from curation.curate.rows import Row
from curation.models import AlignmentLabel, Article, Document, DocumentPair, ReferenceAlignment, Sentence
from curation.queries import article_splits
from pipeline.exports.card import Stats, build_card
from pipeline.exports.parameters import ALIGNED_LABELS, CHUNK, Params
from pipeline.exports.writers import EXTENSIONS, MANUAL_COLUMNS, RowWriter, SplitWriters, columns, open_writer
from pipeline.jobs import ProgressRecorder
from pipeline.models import ExportedDataset

# labelling item -> candidate pair, article and sentence positions (judgments and aggregated labels)
ITEM_FIELDS = (
    "item__candidate__pair__pair_id", "item__candidate__pair__article__slug",
    "item__candidate__simple__paragraph_position", "item__candidate__simple__position",
    "item__candidate__complex__paragraph_position", "item__candidate__complex__position",
)


def _item_columns(job_id: int, item_id: int, pair_id: str, slug: str, sp: int, ss: int, cp: int, cs: int,
                  split_of: Mapping[str, str]) -> dict[str, Any]:
    return {"labeling_job": job_id, "item": item_id, "pair_id": pair_id, "simple_id": sentence_id(pair_id, SIMPLE, sp, ss),
            "complex_id": sentence_id(pair_id, COMPLEX, cp, cs), "split": split_of.get(slug, "all")}


def export_manual(dataset: ExportedDataset, params: Params, folder: Path, tracker: ProgressRecorder) -> dict[str, Any]:
    corpus = dataset.corpus
    labels = params.labels or [c.value for c in AlignmentLabel]
    articles = list(Article.objects.filter(corpus=corpus).order_by("slug").values_list("pk", "slug"))
    split_of = article_splits(corpus.pk, params.splits, params.seed) if params.splits else {s: "all" for _, s in articles}
    stats = Stats()
    writers = SplitWriters(folder, params.format, MANUAL_COLUMNS, params.batch_size)
    extra: list[RowWriter] = []
    files: list[dict[str, Any]] = []
    try:
        if params.splits:
            writers.ensure(params.splits)
        for article_pk, slug in articles:
            n = _manual_article(article_pk, slug, split_of.get(slug, "all"), labels, params, writers, stats)
            tracker.step(n)
        tracker.finish()
        files.extend(writers.close())
        # raw judgments and aggregated labels, kept apart from the verified labels
        ext = EXTENSIONS[params.format]
        judgments = open_writer(params.format, folder / f"judgments.{ext}", columns(
            ("labeling_job", "int"), ("item", "int"), "pair_id", "simple_id", "complex_id", "annotator", "label",
            ("seconds", "float"), ("is_valid", "bool"), "split"), batch_size=params.batch_size)
        extra.append(judgments)
        jq = (
            Judgment.objects.filter(job__corpus=corpus)
            .order_by("job_id", "item_id", "annotator_id")
            .values_list("job_id", "item_id", *ITEM_FIELDS, "annotator_id", "label", "seconds", "is_valid")
        )
        for job_id, item_id, pair_id, slug, sp, ss, cp, cs, annotator_id, label, seconds, valid in jq.iterator(params.chunk_size):
            judgments.write({
                **_item_columns(job_id, item_id, pair_id, slug, sp, ss, cp, cs, split_of),
                "annotator": pseudonym(annotator_id), "label": label, "seconds": float(seconds), "is_valid": bool(valid),
            })
        aggregated = open_writer(params.format, folder / f"aggregated.{ext}", columns(
            ("labeling_job", "int"), ("item", "int"), "pair_id", "simple_id", "complex_id", "label",
            ("confidence", "float"), "method", ("votes", "json"), "split"), batch_size=params.batch_size)
        extra.append(aggregated)
        aq = (
            AggregatedLabel.objects.filter(item__job__corpus=corpus)
            .order_by("item__job_id", "item_id")
            .values_list("item__job_id", "item_id", *ITEM_FIELDS, "label", "confidence", "method", "votes")
        )
        for job_id, item_id, pair_id, slug, sp, ss, cp, cs, label, confidence, method, votes in aq.iterator(params.chunk_size):
            aggregated.write({
                **_item_columns(job_id, item_id, pair_id, slug, sp, ss, cp, cs, split_of),
                "label": label, "confidence": float(confidence), "method": method,
                "votes": {k: votes[k] for k in sorted(votes)},
            })
        files.extend(w.close() for w in extra)
    except BaseException:
        writers.abort()
        for w in extra:
            w.abort()
        raise
    verified = VerifiedLabel.objects.filter(candidate__pair__corpus=corpus)
    source = {
        "labels": {
            "verified": verified.count(),
            "verified_changed_from_aggregate": sum(
                1 for a, v in verified.exclude(aggregated_label="").values_list("aggregated_label", "label") if a != v
            ),
            "reference": ReferenceAlignment.objects.filter(pair__corpus=corpus).count() if params.include_reference else 0,
            "judgments": Judgment.objects.filter(job__corpus=corpus).count(),
            "aggregated": AggregatedLabel.objects.filter(item__job__corpus=corpus).count(),
            "aggregated_by_method": dict(  # which aggregation produced aggregated.<ext> (majority, dawid_skene, mace, glad)
                AggregatedLabel.objects.filter(item__job__corpus=corpus).order_by("method").values_list("method").annotate(n=Count("id"))
            ),
        },
        "agreement": agreement(corpus.pk),
        "annotation_cost": {  # annotation.services.ledger, totals per labeling job (no per-person pay)
            str(job.pk): job_ledger(job).as_dict(per_person=False) for job in LabelingJob.objects.filter(corpus=corpus).order_by("pk")
        },
        "annotators_pseudonymised": "HMAC-SHA256(SECRET_KEY, user id), first 10 hex digits",
    }
    return build_card(dataset, params, stats, files, [], source, split_of)


def _manual_article(
    article_pk: int, slug: str, split: str, labels: list[str], params: Params, writers: SplitWriters, stats: Stats
) -> int:
    """Verified labels (+ reference alignments, + derived non-adjacent links) of one article."""

    sentences: dict[int, tuple[int, int, int, str, int]] = {
        pk: (level, p, s, text, tok)
        for pk, level, p, s, text, tok in Sentence.objects.filter(document__article_id=article_pk).values_list(
            "pk", "document__level", "paragraph_position", "position", "text", "token_count"
        )
    }
    documents = dict(Document.objects.filter(article_id=article_pk).values_list("level", "level_label"))
    pairs = {
        (c, s): pid
        for pid, c, s in DocumentPair.objects.filter(article_id=article_pk).values_list("pair_id", "complex__level", "simple__level")
    }
    # (complex_pk, simple_pk) -> (label, source, score)
    links: dict[tuple[int, int], tuple[str, str, float | None]] = {}
    if params.include_reference:
        for c_pk, s_pk, label, score in ReferenceAlignment.objects.filter(pair__article_id=article_pk).order_by(
            "role", "pk").values_list("complex_id", "simple_id", "label", "score"):
            links.setdefault((c_pk, s_pk), (label, "reference", score))
    for c_pk, s_pk, label in VerifiedLabel.objects.filter(candidate__pair__article_id=article_pk).values_list(
        "candidate__complex_id", "candidate__simple_id", "label"
    ):
        links[(c_pk, s_pk)] = (label, "verified", None)
    if params.derive:
        level_links = [
            LevelLink(sentences[c][0], sentences[s][0], c, s, label)
            for (c, s), (label, _, _) in links.items() if c in sentences and s in sentences
        ]
        for link in derive_links(level_links):
            links.setdefault((int(link.complex), int(link.simple)), (link.label, "derived", None))  # type: ignore[call-overload]
    by_pair: dict[tuple[int, int], list[tuple[int, int, str, str, float | None]]] = defaultdict(list)
    for (c, s), (label, source, score) in links.items():
        if label not in labels or c not in sentences or s not in sentences:
            continue
        by_pair[(sentences[c][0], sentences[s][0])].append((c, s, label, source, score))
    written = 0
    for (clevel, slevel) in sorted(by_pair):
        pair_id = pairs.get((clevel, slevel)) or f"{slug}.{_label(documents.get(clevel, str(clevel)))}_{_label(documents.get(slevel, str(slevel)))}"
        entries = sorted(by_pair[(clevel, slevel)], key=lambda e: (sentences[e[1]][1:3], sentences[e[0]][1:3]))
        rows: list[Row] = []
        keys: list[tuple[Any, Any]] = []
        sources: list[str] = []
        for c, s, label, source, score in entries:
            _, cp, cs, ctext, _ = sentences[c]
            _, sp, ss, stext, _ = sentences[s]
            rows.append(Row(label=label, simple_id=sentence_id(pair_id, SIMPLE, sp, ss), complex_id=sentence_id(pair_id, COMPLEX, cp, cs),
                            simple=stext, complex=ctext, score=score, pair_id=pair_id, article=slug,
                            complex_level=clevel, simple_level=slevel, split=split))
            keys.append((c, s))
            sources.append(source)
        aligned = [(r, k) for r, k in zip(rows, keys, strict=True) if r.label in ALIGNED_LABELS]
        if aligned:
            classify_rows([r for r, _ in aligned], [k for _, k in aligned], stats.groups_by_phenomenon)
        for row, (c, s), source in zip(rows, keys, sources, strict=True):
            row.source = source
            stats.add(row, sentences[c][4], sentences[s][4], source)
            writers.write(split, row)
            written += 1
    return written


def _label(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)


def agreement(corpus_id: int) -> dict[str, Any]:
    """Krippendorff's alpha (nominal, ``annotation.agreement``) and observed pairwise agreement of
    the valid judgments of each labeling job of the corpus."""
    per_job: dict[int, dict[int, np.ndarray]] = defaultdict(dict)
    for job_id, item_id, label in Judgment.objects.filter(job__corpus_id=corpus_id, is_valid=True).order_by().values_list(
        "job_id", "item_id", "label"
    ).iterator(chunk_size=CHUNK):
        counts = per_job[job_id].get(item_id)
        if counts is None:
            counts = per_job[job_id][item_id] = np.zeros(len(LABELS), dtype=np.int64)
        counts[LABEL_CODE[label]] += 1
    out: dict[str, Any] = {}
    for job_id in sorted(per_job):
        items = per_job[job_id]
        matrix = np.array([items[k] for k in sorted(items)], dtype=np.int64).reshape(-1, len(LABELS))
        pairable = matrix[matrix.sum(axis=1) >= 2]
        n = pairable.sum(axis=1)
        total = int((n * (n - 1)).sum())
        agree = int((pairable * (pairable - 1)).sum())
        alpha = krippendorff_alpha_nominal(pairable) if len(pairable) else float("nan")
        out[str(job_id)] = {
            "items": len(items), "items_with_2plus": len(pairable),
            "judgments": int(matrix.sum()),
            "krippendorff_alpha": None if alpha != alpha else round(alpha, 4),
            "observed_agreement": round(agree / total, 4) if total else None,
        }
    return out
