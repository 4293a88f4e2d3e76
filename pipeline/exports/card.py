"""The dataset card: counts accumulated while rows stream by (:class:`Stats`), the card itself
(``card.json``) and its Markdown rendering (``README.md``). Every figure is a recount of the rows
written."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from curation.curate import phenomena as ph
from curation.curate.filters import Filter
from curation.curate.rows import Row
from curation.queries import count_split_leaks
from pipeline.exports.parameters import Params
from pipeline.models import ExportedDataset


@dataclass
class Stats:
    """What the card reports, accumulated while rows stream by."""

    rows_by_split: Counter[str] = field(default_factory=Counter)
    rows_by_label: Counter[str] = field(default_factory=Counter)
    rows_by_source: Counter[str] = field(default_factory=Counter)
    rows_by_phenomenon: Counter[str] = field(default_factory=Counter)
    groups_by_phenomenon: Counter[str] = field(default_factory=Counter)
    complex_tokens: Counter[str] = field(default_factory=Counter)
    simple_tokens: Counter[str] = field(default_factory=Counter)
    level_pairs: Counter[str] = field(default_factory=Counter)
    articles_by_split: dict[str, set[str]] = field(default_factory=dict)  # articles that have rows
    synthetic: int = 0
    pairs_seen: int = 0
    input_rows: int = 0

    def add(self, row: Row, complex_tokens: int, simple_tokens: int, source: str = "") -> None:
        self.rows_by_split[row.split] += 1
        self.rows_by_label[row.label] += 1
        if source:
            self.rows_by_source[source] += 1
        if row.phenomenon:
            self.rows_by_phenomenon[row.phenomenon] += 1
        self.complex_tokens[row.split] += complex_tokens
        self.simple_tokens[row.split] += simple_tokens
        if row.complex_level is not None and row.simple_level is not None:
            self.level_pairs[f"{row.complex_level}-{row.simple_level}"] += 1
        if row.synthetic:
            self.synthetic += 1
        elif row.article:
            self.articles_by_split.setdefault(row.split, set()).add(row.article)

    def lengths(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for split, n in sorted(self.rows_by_split.items()):
            c = self.complex_tokens[split] / n if n else 0.0
            s = self.simple_tokens[split] / n if n else 0.0
            out[split] = {"complex_tokens": round(c, 2), "simple_tokens": round(s, 2),
                          "compression": round(s / c, 3) if c else None}
        total = sum(self.rows_by_split.values())
        if total:
            c = sum(self.complex_tokens.values()) / total
            s = sum(self.simple_tokens.values()) / total
            out["all"] = {"complex_tokens": round(c, 2), "simple_tokens": round(s, 2), "compression": round(s / c, 3) if c else None}
        return out


def percentages(counts: Counter[str] | dict[str, int], order: Iterable[str]) -> dict[str, dict[str, float | int]]:
    total = sum(counts.values())
    return {k: {"count": int(counts.get(k, 0)), "percent": round(100 * counts.get(k, 0) / total, 2) if total else 0.0} for k in order}


def build_card(
    dataset: ExportedDataset, params: Params, stats: Stats, files: list[dict[str, Any]], filters: list[Filter],
    source: dict[str, Any], split_of: dict[str, str],
) -> dict[str, Any]:
    # "articles": the article groups that have rows in each split (a recount of the rows written);
    # "articles_assigned": how many the splitter gave each split (some may have no rows at all)
    assigned = Counter(split_of.values())
    with_rows = {split: len(stats.articles_by_split.get(split, ())) for split in sorted(set(assigned) | set(stats.rows_by_split))}
    splits: dict[str, Any] = {"ratios": params.splits, "seed": params.seed, "articles": with_rows,
                              "articles_assigned": dict(sorted(assigned.items()))}
    if params.splits:  # the leak check: sentence texts in two splits (0 when article groups are right)
        count, examples = count_split_leaks(dataset.corpus, split_of, limit=5)
        splits["shared_sentences"] = {"count": count, "examples": [leak.as_dict() for leak in examples]}
    return {
        "card_version": 1,
        "kind": dataset.kind,
        "format": params.format,
        "corpus": {"name": dataset.corpus.name, "language": dataset.corpus.language, "kind": dataset.corpus.kind},
        "params": {
            "splits": params.splits, "seed": params.seed, "filters": params.filters, "labels": params.labels,
            "synthetic_ratio": params.synthetic_ratio, "include_reference": params.include_reference,
            "derive": params.derive,
        },
        "counts": {
            "rows": int(sum(stats.rows_by_split.values())),
            "input_rows": stats.input_rows,
            "document_pairs": stats.pairs_seen,
            "by_split": dict(sorted(stats.rows_by_split.items())),
            "by_label": dict(sorted(stats.rows_by_label.items())),
            "by_source": dict(sorted(stats.rows_by_source.items())),
            "by_level_pair": dict(sorted(stats.level_pairs.items())),
            "synthetic": stats.synthetic,
        },
        "splits": splits,
        "filters": [f.report() for f in filters],
        "phenomena": {
            "groups": percentages(stats.groups_by_phenomenon, ph.PHENOMENA_ORDER),
            "rows": percentages(stats.rows_by_phenomenon, [p for p in ph.PHENOMENA_ORDER if p != "deletion"]),
        },
        "lengths": stats.lengths(),
        "source": source,
        "files": files,
    }


def card_markdown(card: dict[str, Any], title: str) -> str:
    lines = [f"# {title}", "", f"Kind: **{card['kind']}**, format: **{card['format']}**, corpus: "
             f"**{card['corpus']['name']}** ({card['corpus']['language']}).", ""]
    counts = card["counts"]
    lines += ["## Counts", "", "| split | rows | articles | avg complex tokens | avg simple tokens |", "|---|---:|---:|---:|---:|"]
    for split, n in counts["by_split"].items():
        length = card["lengths"].get(split, {})
        lines.append(f"| {split} | {n} | {card['splits']['articles'].get(split, '')} | "
                     f"{length.get('complex_tokens', '')} | {length.get('simple_tokens', '')} |")
    lines += ["", f"Total rows: {counts['rows']} (synthetic: {counts['synthetic']}); labels: "
              + ", ".join(f"{k} {v}" for k, v in counts["by_label"].items()), ""]
    if card["splits"]["ratios"]:
        lines += [f"Splits by article group, ratios {card['splits']['ratios']}, seed {card['splits']['seed']}.", ""]
        shared = card["splits"].get("shared_sentences")
        if shared is not None:
            lines += [f"Sentence texts shared across splits: {shared['count']}"
                      + (" (leak check passed)." if not shared["count"] else " (see `splits.shared_sentences` in card.json)."), ""]
    if card["filters"]:
        lines += ["## Filters", "", "| filter | parameters | published default | removed |", "|---|---|---|---:|"]
        for f in card["filters"]:
            params = {k: v for k, v in f["params"].items() if k != "path"}
            lines.append(f"| {f['name']} | {params} | {f['defaults']} | {f['removed']} |")
        lines.append("")
    lines += ["## Phenomena (aligned groups)", "", "| phenomenon | groups | % |", "|---|---:|---:|"]
    for name, value in card["phenomena"]["groups"].items():
        lines.append(f"| {name} | {value['count']} | {value['percent']} |")
    lines += ["", "## Source", "", "```json", json.dumps(card["source"], indent=2, sort_keys=True, ensure_ascii=False), "```", "", "## Files", "",
              "| file | rows | bytes | sha256 |", "|---|---:|---:|---|"]
    for f in card["files"]:
        lines.append(f"| {f['name']} | {f['rows'] if f['rows'] is not None else ''} | {f['bytes']} | `{f['sha256']}` |")
    return "\n".join(lines) + "\n"
