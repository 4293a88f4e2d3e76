"""What the job, model and export pages show, read from the stored rows: the paper's Table 2
layout of a model's metrics, data counts per split, configurations as definition lists, warnings
for empty splits or empty exports, and small server-side SVG charts. The views stay thin."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString

from annotation import charts
from pipeline.models import ExportedDataset, Job, ModelVersion, RunChunk
from pipeline.services.registry import MEASURES, SPLITS, TASKS

DATA_SPLITS = ("train", "dev", "test")
LABELS = ("aligned", "partialAligned", "notAligned")
COUNT_COLUMNS = ("articles", "pairs", "labels", *LABELS, "partial_pairs", "unlabelled")
TASK_NAMES = {"task1": "Task 1 (aligned + partial)", "task2": "Task 2 (aligned)"}


def percent(value: Any) -> str:
    """A 0..1 figure as the paper prints it (one decimal, percent), a dash when unknown."""
    return "—" if value is None else f"{100 * float(value):.1f}"


@dataclass
class MetricsRow:
    split: str
    cells: list[str]  # task1 P R F1, task2 P R F1
    gold_pairs: int | None

    @property
    def missing(self) -> bool:
        return all(c == "—" for c in self.cells)


def metrics_rows(metrics: dict[str, Any]) -> list[MetricsRow]:
    """One row per evaluation split (dev, test), columns as Table 2: Task 1 P/R/F1, Task 2 P/R/F1."""
    rows = []
    for split in SPLITS:
        block = (metrics or {}).get(split) or {}
        cells = [percent((block.get(task) or {}).get(m)) for task in TASKS for m in MEASURES]
        gold = (block.get("counts") or {}).get("gold_positive_pairs")
        rows.append(MetricsRow(split, cells, None if gold is None else int(gold)))
    return rows


def counts_rows(data_counts: dict[str, Any]) -> list[tuple[str, list[int]]]:
    """(split, [articles, pairs, labels, aligned, partial, not aligned, partially labelled pairs, unlabelled
    candidates]) for train, dev, test, total (counts recorded before the last two existed read 0)."""
    rows = [(s, [int((data_counts.get(s) or {}).get(c, 0)) for c in COUNT_COLUMNS]) for s in DATA_SPLITS if s in data_counts]
    if rows:
        rows.append(("total", [sum(r[1][i] for r in rows) for i in range(len(COUNT_COLUMNS))]))
    return rows


def split_warnings(data_counts: dict[str, Any], metrics: dict[str, Any]) -> list[str]:
    """Plain sentences about what the figures cannot say: an empty split, a split without positives."""
    out = []
    for split in DATA_SPLITS:
        counts = data_counts.get(split)
        if counts is None:
            continue
        if not counts.get("pairs"):
            what = {"train": "nothing was trained on", "dev": "nothing tuned the model", "test": "there are no test metrics"}
            out.append(f"The {split} split is empty ({what[split]}): verify labels in more articles or change the ratios.")
        elif split != "train" and not (counts.get("aligned", 0) + counts.get("partialAligned", 0)):
            out.append(f"The {split} split has no aligned labels, so its recall is undefined.")
        if counts.get("partial_pairs"):
            how = ("were marginalised out in training" if split == "train"
                   else "were left out of its scores (neither right nor wrong)")
            out.append(f"{counts['partial_pairs']} document pair(s) of the {split} split are partially labelled "
                       f"(a selective labeling job): their {counts.get('unlabelled', 0)} unlabelled candidates {how}, "
                       "not read as not aligned.")
    if data_counts and not (metrics or {}).get("test"):
        out.append("This version has no test metrics; it can only be promoted with force.")
    return list(dict.fromkeys(out))


def _flat(value: Any, prefix: str = "") -> Iterable[tuple[str, str]]:
    if isinstance(value, dict):
        if not value and prefix:
            yield prefix, "—"
        for k, v in value.items():
            yield from _flat(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, (list, tuple)):
        if value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                yield from _flat(v, f"{prefix}[{i}]")
        else:
            yield prefix, ", ".join(str(v) for v in value) if value else "—"
    else:
        yield prefix, "—" if value is None or value == "" else str(value)


#: What an empty value of these keys means, said on the page instead of a dash.
EMPTY_MEANS = {"config": "none: the engine's measured defaults, CRFConfig()", "filters": "none", "reference_roles": "none",
               "baselines": "none"}


def definition_items(data: dict[str, Any], skip: Sequence[str] = ()) -> list[tuple[str, str]]:
    """A nested JSON object as (dotted key, text) pairs for a ``<dl>``."""
    items = _flat({k: v for k, v in (data or {}).items() if k not in skip})
    return [(k, EMPTY_MEANS[k] if v == "—" and k in EMPTY_MEANS else v) for k, v in items]


def model_meta(version: ModelVersion) -> dict[str, Any]:
    """A trained version's ``model.json``, read once for its page; empty for a baseline or a directory that is gone
    or unreadable (the page shows the rest)."""
    from alignment_engine.api import read_model_meta
    from alignment_engine.errors import ModelError

    if not version.path:
        return {}
    try:
        return read_model_meta(version.path)
    except ModelError:
        return {}


def training_options(version: ModelVersion, meta: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """Every CRFConfig option of a trained version: (name, value, differs from today's default). The values are
    those its model directory's ``model.json`` (``meta``: :func:`model_meta`) stores (what trained it, even where a
    default has changed since); without a readable directory, the options the job sent over today's defaults."""
    from alignment_engine.crf_config import CRFConfig

    defaults = CRFConfig().to_dict()
    used = {**defaults, **((version.config or {}).get("train") or {})}
    stored = meta.get("config")
    if isinstance(stored, dict):
        used = {**defaults, **stored}
    return [(name, "—" if used.get(name) is None else str(used.get(name)), used.get(name) != default)
            for name, default in defaults.items()]


def trained_with(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """What trained a version, from its model directory's ``model.json`` (``meta``: :func:`model_meta`)
    ``environment`` (Python, package versions, torch's CPU kernels, the CRFs' float type, threads); empty for a
    baseline, a model saved before the engine recorded it, or a directory that is gone or unreadable."""
    env = meta.get("environment")
    if not isinstance(env, dict):
        return []
    packages = env.get("packages")
    fields = [("Python", env.get("python")), ("machine", env.get("machine")),
              *(packages.items() if isinstance(packages, dict) else ()),
              ("torch CPU kernels", env.get("torch_cpu_capability")), ("CRF float type", env.get("crf_dtype")),
              ("torch threads", env.get("torch_threads"))]
    return [(str(name), "—" if value is None else str(value)) for name, value in fields]


def seed_ensemble(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """A seed ensemble's members (``model.json`` ``ensemble``; ``meta``: :func:`model_meta`): their seeds, each
    member's held-out dev Task 1 F1 next to the ensemble's (percent, as the metrics table), and the training time;
    empty for a single model."""
    ens = meta.get("ensemble")
    if not isinstance(ens, dict):
        return []

    def f1(metrics: Any) -> str:
        task1 = metrics.get("task1") if isinstance(metrics, dict) else None
        value = task1.get("f1") if isinstance(task1, dict) else None
        return percent(value if isinstance(value, (int, float)) else None)

    def listed(key: str) -> list[Any]:
        value = ens.get(key)
        return value if isinstance(value, list) else []

    seeds, members = listed("seeds"), listed("member_dev_metrics")
    rows = [("members", str(ens.get("members", len(seeds)))), ("seeds", ", ".join(map(str, seeds)) or "—"),
            ("dev Task 1 F1 of the ensemble (held out)", f1(meta.get("dev_metrics")))]
    rows += [(f"member {k}{f' (seed {seeds[k]})' if k < len(seeds) else ''} alone", f1(m)) for k, m in enumerate(members)]
    seconds = ens.get("seconds")
    if isinstance(seconds, (int, float)):
        rows.append(("training", f"{seconds / 60:.1f} min, {ens.get('workers', '—')} runs at a time"))
    return rows


def label_chart(data_counts: dict[str, Any], title: str = "Labels per split") -> SafeString | None:
    rows = [(s, {k: int((data_counts.get(s) or {}).get(k, 0)) for k in LABELS}) for s in DATA_SPLITS if s in data_counts]
    if not any(sum(c.values()) for _, c in rows):
        return None
    return charts.stacked_bars_svg(rows, LABELS, title)


def f1_history_chart(versions: Sequence[ModelVersion]) -> SafeString | None:
    """Dev and test F1 (Task 1 and Task 2) of trained versions in creation order."""
    trained = sorted((v for v in versions if v.path), key=lambda v: v.created_at)
    if not trained:
        return None

    def f1(v: ModelVersion, split: str, task: str) -> float | None:
        value = ((v.metrics or {}).get(split) or {}).get(task, {}).get("f1")
        return None if value is None else float(value)

    series = {f"{split} {task.replace('task', 'Task ')}": [f1(v, split, task) for v in trained]
              for task in TASKS for split in SPLITS}
    labels = [f"#{v.pk} {v.created_at:%m-%d}" for v in trained]
    return charts.lines_svg(labels, series, "F1 of retrained models over time", y_label="F1")


def job_progress_chart(job: Job) -> SafeString | None:
    """A corpus alignment's chunks done over time since the job started (from the chunks' finish times)."""
    started = job.started_at
    if started is None or job.kind != Job.Kind.ALIGN_CORPUS:
        return None
    finished = sorted(t for t in RunChunk.objects.filter(run__job=job, status=RunChunk.Status.DONE)
                      .values_list("finished_at", flat=True) if t is not None)
    if not finished:
        return None
    points = [(max((t - started).total_seconds(), 0.0), i + 1) for i, t in enumerate(finished)]
    return charts.progress_svg(points, job.progress_total or len(points), f"Progress of job {job.pk}", "chunks")


def job_result_items(job: Job) -> list[tuple[str, str]]:
    """The job's result without what the page shows as tables (metrics, counts)."""
    return definition_items(job.result, skip=("metrics", "data_counts"))


def export_warnings(dataset: ExportedDataset) -> list[str]:
    """A finished export with no rows, or with empty splits, says so."""
    card = dataset.card or {}
    if not dataset.files or not card:
        return []
    counts = card.get("counts") or {}
    out = []
    if not counts.get("rows"):
        removed = sum(int(f.get("removed") or 0) for f in card.get("filters") or [])
        why = f"the filters removed all {removed:,} rows" if removed else "the source has no rows to export"
        out.append(f"This export has 0 rows: {why}. Its files hold only a header.")
    elif (dataset.params or {}).get("splits"):
        by_split = counts.get("by_split") or {}
        empty = [s for s in DATA_SPLITS if not by_split.get(s)]
        if empty:
            out.append(f"Empty split{'s' if len(empty) > 1 else ''}: {', '.join(empty)} (too few articles for the ratios).")
    return out
