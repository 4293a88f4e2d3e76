"""Exporting a study: raw ratings (valid, and the excluded raters' apart) and aggregates as CSV
and JSONL, pairwise tests, rater figures, and a card (JSON and Markdown) whose every figure is
recounted from the rows written, and the study's cost ledger in total. Raters appear under the pseudonyms of ``accounts.pseudonyms``.

All or nothing: every file is written into a hidden temporary folder beside the target, which
is renamed to ``EXPORTS_DIR/evaluation/study-<id>/<n>`` only when all of them are complete (on
error it is removed). Files carry no timestamps of their own; the same rows give the same bytes.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from accounts.pseudonyms import pseudonym
from annotation.evaluation.designs import DESIGNS
from annotation.evaluation.services import ledger, raters, results
from annotation.models import Rating, Study

RATING_COLUMNS = (
    "study", "item_id", "system", "is_control", "rater", "page", "position", "dimension", "value", "seconds", "answered_at", "is_valid",
)
AGGREGATE_COLUMNS = ("system", "dimension", "mean", "sd", "ci_low", "ci_high", "n", "n_items", "n_raters")
PAIR_COLUMNS = ("dimension", "system_a", "system_b", "mean_diff", "n_items", "p_value", "p_holm", "method", "significant")


def _file_info(path: Path, rows: int | None) -> dict[str, Any]:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {"name": path.name, "rows": rows, "bytes": path.stat().st_size, "sha256": digest}


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return value


def write_csv(path: Path, names: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([_csv_cell(row.get(n)) for n in names])
        _sync(handle)
    return _file_info(path, len(rows))


def write_jsonl(path: Path, names: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({n: row.get(n) for n in names}, ensure_ascii=False) + "\n")
        _sync(handle)
    return _file_info(path, len(rows))


def write_text(path: Path, text: str) -> dict[str, Any]:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        _sync(handle)
    return _file_info(path, None)


def write_json(path: Path, data: Any) -> dict[str, Any]:
    return write_text(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def _sync(handle: Any) -> None:
    handle.flush()
    os.fsync(handle.fileno())


def _both(folder: Path, stem: str, names: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [write_csv(folder / f"{stem}.csv", names, rows), write_jsonl(folder / f"{stem}.jsonl", names, rows)]


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
        figures = [{**f.as_dict(), "rater": pseudonym(f.rater_id)} for f in raters.rater_figures(study)]
        for r in figures:
            r.pop("rater_id")
            r.pop("username")
        files.append(write_json(tmp / "raters.json", figures))
        card = _card(study, res, valid, apart, files)
        files.append(write_text(tmp / "README.md", card_markdown(card)))
        card["files"] = files
        write_json(tmp / "card.json", card)
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
        "annotation_cost": ledger.study_ledger(study).as_dict(per_person=False),  # totals only: no per-person pay
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
    cost = card["annotation_cost"]
    t, cur = cost["total"], cost["currency"]
    lines += ["", "## Cost ledger", "",
              f"Pay {cost['pay_per_judgment']} {cur} per rating (control ratings included) + {cost['pay_per_hour']} {cur} per hour on task "
              "(server-measured); totals over all raters, the excluded included.", "",
              "| what | value |", "|---|---:|"]
    lines += [f"| {k.replace('_', ' ')} | {v} |" for k, v in t.items() if k != "cost"]
    lines += [f"| cost | {t['cost']} {cur} |",
              f"| cost per valid rating | {cost['cost_per_valid_rating'] or '–'} {cur if cost['cost_per_valid_rating'] else ''} |",
              f"| cost per item fully rated ({cost['items_complete']} of {cost['items']}) | {cost['cost_per_item'] or '–'} {cur if cost['cost_per_item'] else ''} |"]
    lines += ["", "## Files", "", "| file | rows | bytes | sha256 |", "|---|---:|---:|---|"]
    lines += [f"| {f['name']} | {f['rows'] if f['rows'] is not None else ''} | {f['bytes']} | `{f['sha256']}` |" for f in card["files"]]
    return "\n".join(lines) + "\n"
