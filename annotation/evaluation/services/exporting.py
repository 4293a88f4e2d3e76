"""Exporting a study: raw ratings (valid, and the excluded raters' apart) and aggregates as CSV
and JSONL, pairwise tests, rater figures, and a card (JSON and Markdown) whose every figure is
recounted from the rows written. Files are written atomically into a new folder
``EXPORTS_DIR/evaluation/study-<id>/<n>``; raters appear under stable pseudonyms."""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from annotation.evaluation.designs import DESIGNS
from annotation.evaluation.models import Rating, Study
from annotation.evaluation.services import quality, results
from curation.exports import Column, JsonlWriter, RowWriter, columns, write_json_atomic, write_text_atomic
from curation.services.export import pseudonym

RATING_COLUMNS = columns(
    "study", "item_id", "system", "is_control", "rater", ("page", "int"), ("position", "int"), "dimension", ("value", "float"),
    ("seconds", "float"), "answered_at", ("is_valid", "bool"),
)
AGGREGATE_COLUMNS = columns(
    "system", "dimension", ("mean", "float"), ("sd", "float"), ("ci_low", "float"), ("ci_high", "float"), ("n", "int"),
    ("n_items", "int"), ("n_raters", "int"),
)
PAIR_COLUMNS = columns("dimension", "system_a", "system_b", ("mean_diff", "float"), ("n_items", "int"), ("p_value", "float"),
                       ("p_holm", "float"), "method", ("significant", "bool"))


class CsvWriter(RowWriter):
    """Comma-separated with a header, through the atomic file of ``curation.exports``."""

    def __init__(self, path: str | Path, cols: Sequence[Column]) -> None:
        super().__init__(path, cols)
        self._buffer = io.StringIO()
        self._csv = csv.writer(self._buffer, lineterminator="\n")
        self._emit(self.names)

    def _emit(self, cells: Sequence[Any]) -> None:
        self._csv.writerow(["" if c is None else ("true" if c is True else "false" if c is False else c) for c in cells])
        self._file.handle.write(self._buffer.getvalue().encode("utf-8"))
        self._buffer.seek(0)
        self._buffer.truncate()

    def write(self, row: Mapping[str, Any]) -> None:
        self._emit([row.get(name) for name in self.names])
        self.rows += 1


def _both(folder: Path, stem: str, cols: Sequence[Column], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    files = []
    for writer in (CsvWriter(folder / f"{stem}.csv", cols), JsonlWriter(folder / f"{stem}.jsonl", cols)):
        try:
            for row in rows:
                writer.write(row)
            files.append(writer.close())
        except BaseException:
            writer.abort()
            raise
    return files


def _rating_rows(study: Study, valid: bool) -> list[dict[str, Any]]:
    qs = Rating.objects.filter(study=study, is_valid=valid).select_related("item", "output", "page").order_by("item__position", "page_id", "position", "dimension")
    return [
        {"study": study.pk, "item_id": r.item.key, "system": "" if r.output.is_control else r.output.system,
         "is_control": r.output.is_control, "rater": pseudonym(r.rater_id), "page": r.page_id, "position": r.position,
         "dimension": r.dimension, "value": r.value, "seconds": r.page.seconds,
         "answered_at": r.page.answered_at.isoformat() if r.page.answered_at else "", "is_valid": r.is_valid}
        for r in qs.iterator(chunk_size=2000)
    ]


def next_folder(study: Study) -> Path:
    root = Path(settings.EXPORTS_DIR) / "evaluation" / f"study-{study.pk}"
    root.mkdir(parents=True, exist_ok=True)
    taken = [int(p.name) for p in root.iterdir() if p.is_dir() and p.name.isdigit()]
    return root / str(max(taken, default=0) + 1)


def export_study(study: Study, n_boot: int = 2000) -> tuple[Path, dict[str, Any]]:
    """Write every file into a temporary folder, then move it into place (all or nothing)."""
    final = next_folder(study)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=final.parent))
    try:
        res = results.study_results(study, n_boot=n_boot)
        valid, apart = _rating_rows(study, True), _rating_rows(study, False)
        files = _both(tmp, "ratings", RATING_COLUMNS, valid)
        files += _both(tmp, "ratings_excluded", RATING_COLUMNS, apart)
        files += _both(tmp, "aggregates", AGGREGATE_COLUMNS, [s.as_dict() for s in res.summary.scores])
        files += _both(tmp, "pairwise", PAIR_COLUMNS, [p.as_dict() for p in res.summary.pairs])
        raters = [{**f.as_dict(), "rater": pseudonym(f.rater_id)} for f in quality.rater_figures(study)]
        for r in raters:
            r.pop("rater_id")
            r.pop("username")
        files.append(write_json_atomic(tmp / "raters.json", raters))
        card = _card(study, res, valid, apart, files)
        files.append(write_text_atomic(tmp / "README.md", card_markdown(card)))
        card["files"] = files
        write_json_atomic(tmp / "card.json", card)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final, card


def _card(study: Study, res: results.StudyResults, valid: list[dict[str, Any]], apart: list[dict[str, Any]],
          files: list[dict[str, Any]]) -> dict[str, Any]:
    system_rows = [r for r in valid if not r["is_control"]]
    return {
        "card_version": 1,
        "study": {"id": study.pk, "name": study.name, "design": study.design, "design_label": DESIGNS[study.design].label,
                  "status": study.status, "source": DESIGNS[study.design].source},
        "settings": {k: getattr(study, k) for k in ("raters_per_item", "sample_size", "seed", "min_seconds", "show_reference",
                                                    "control_threshold", "flag_share", "min_control_pages")},
        "input": study.source_info,
        "counts": {
            "items": len({r["item_id"] for r in valid} | {r["item_id"] for r in apart}) if (valid or apart) else 0,
            "items_rated": len({r["item_id"] for r in valid}),
            "systems": len(study.systems),
            "ratings": len(valid), "system_ratings": len(system_rows), "control_ratings": len(valid) - len(system_rows),
            "pages": len({r["page"] for r in valid}), "raters": len({r["rater"] for r in valid}),
            "excluded_ratings": len(apart), "excluded_raters": len({r["rater"] for r in apart}),
        },
        "statistics": {"bootstrap": res.bootstrap, "n_boot": res.n_boot, "test": res.test, "correction": "Holm",
                       "interval": "95% percentile bootstrap", "seed": study.seed},
        "scores": [s.as_dict() for s in res.summary.scores],
        "agreement": res.as_dict()["agreement"],
        "metrics": [x.as_dict() for x in res.metrics],
        "positions": res.positions,
        "files": files,
    }


def _fmt(v: Any) -> str:
    return "" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def card_markdown(card: dict[str, Any]) -> str:
    s, c = card["study"], card["counts"]
    lines = [f"# {s['name']}", "", f"Design: **{s['design_label']}** ({s['source']}).", "",
             "## Counts", "", "| what | n |", "|---|---:|"]
    lines += [f"| {k.replace('_', ' ')} | {v} |" for k, v in c.items()]
    st = card["statistics"]
    lines += ["", "## Scores", "", f"Mean, sd and {st['interval']} ({st['bootstrap']}, {st['n_boot']} replicates, seed {st['seed']}).", "",
              "| system | dimension | mean | sd | 95% CI | n | items | raters |", "|---|---|---:|---:|---|---:|---:|---:|"]
    for x in card["scores"]:
        lines.append(f"| {x['system']} | {x['dimension']} | {_fmt(x['mean'])} | {_fmt(x['sd'])} | [{_fmt(x['ci_low'])}, {_fmt(x['ci_high'])}] "
                     f"| {x['n']} | {x['n_items']} | {x['n_raters']} |")
    lines += ["", "## Agreement (Krippendorff's alpha)", "", "| dimension | level | alpha | units |", "|---|---|---:|---:|"]
    lines += [f"| {a['dimension']} | {a['level']} | {_fmt(a['alpha'])} | {a['units']} |" for a in card["agreement"]]
    if card["metrics"]:
        lines += ["", "## Automatic metrics", "", "| system | SARI | BLEU | FKGL | length |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {x['system']} | {_fmt(x['sari'])} | {_fmt(x['bleu'])} | {_fmt(x['fkgl'])} | {_fmt(x['length'])} |" for x in card["metrics"]]
    lines += ["", "## Files", "", "| file | rows | bytes | sha256 |", "|---|---:|---:|---|"]
    lines += [f"| {f['name']} | {f['rows'] if f['rows'] is not None else ''} | {f['bytes']} | `{f['sha256']}` |" for f in card["files"]]
    return "\n".join(lines) + "\n"
