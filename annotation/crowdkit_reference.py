"""Toloka's crowd-kit implementations of the same aggregators, run on our ``Judgments``.

Only for comparison: ``scripts/simulate_job.py --crowdkit``, ``scripts/bench_agreement.py
--crowdkit`` and the validation tests import it; the product aggregates with
``annotation.aggregation`` (docs/annotation-quality.md says why). crowd-kit (pinned in
requirements.txt) needs pandas; it is imported here only when called.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotation.agreement import Judgments

METHODS: tuple[str, ...] = ("majority", "dawid_skene", "mace", "glad")


@dataclass
class Reference:
    method: str
    labels: np.ndarray  # shape (n_items,) label codes; -1 for an item crowd-kit left out
    posterior: np.ndarray  # shape (n_items, K)
    seconds: float
    model: Any  # the fitted crowd-kit object (its own parameters: errors_, thetas_, alphas_, betas_ ...)


def _model(method: str, **options: Any) -> Any:
    from crowdkit.aggregation import GLAD, MACE, DawidSkene, MajorityVote

    if method == "majority":
        return MajorityVote(**options)
    if method == "dawid_skene":
        return DawidSkene(**{"n_iter": 100, **options})
    if method == "mace":
        return MACE(**options)
    if method == "glad":
        return GLAD(**options)
    raise ValueError(f"unknown crowd-kit method {method!r}; expected one of {', '.join(METHODS)}")


def run(method: str, j: Judgments, renumber: bool = True, **options: Any) -> Reference:
    """Fit crowd-kit's ``method`` (its defaults unless ``options`` say otherwise) and time it,
    building the DataFrame included.

    With ``renumber`` workers, tasks and labels are renumbered in order of first appearance
    before crowd-kit sees them: crowd-kit 1.4.2's MACE indexes its spam strategies by
    ``pd.factorize`` codes (order of appearance) but fills them from a ``groupby`` (sorted ids),
    so with other ids each worker gets another worker's strategy and the result depends on how
    the ids happen to be numbered (``renumber=False`` shows it).
    """
    import pandas as pd

    model = _model(method, **options)
    start = time.perf_counter()
    if renumber:
        tasks, task_ids = pd.factorize(j.items)
        workers, _ = pd.factorize(j.annotators)
        labels, label_ids = pd.factorize(j.labels)
    else:
        tasks, task_ids = j.items, np.arange(j.n_items)
        workers, labels, label_ids = j.annotators, j.labels, np.arange(j.n_labels)
    frame = pd.DataFrame({"task": tasks, "worker": workers, "label": labels})
    probas = model.fit_predict_proba(frame)
    seconds = time.perf_counter() - start
    probas = probas.reindex(index=range(len(task_ids)), columns=range(len(label_ids))).fillna(0.0)
    posterior = np.zeros((j.n_items, j.n_labels))
    posterior[np.ix_(np.asarray(task_ids), np.asarray(label_ids))] = probas.to_numpy(dtype=np.float64)
    labels = np.where(posterior.sum(axis=1) > 0, posterior.argmax(axis=1), -1)
    return Reference(method=method, labels=labels, posterior=posterior, seconds=seconds, model=model)
