"""DEplain-web train and dev prepared as the engine's experiment scripts use them (``engine_decoders.py``,
``engine_ensemble.py``): pairs and gold, lexical features, the normalisation fitted on train, gold matrices.

Scripts run as ``python scripts/NAME.py`` have this folder on ``sys.path``: ``from engine_data import deplain_web``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "deplain-web"
WORD = re.compile(r"\w{4,}")


@dataclass
class Prepared:
    train_pairs: list
    train_gold: list
    dev_pairs: list
    dev_gold: list
    pos: dict  # train pair id -> its gold cells
    docs: list  # train DocData
    dev_docs: list
    mean: np.ndarray
    scale: np.ndarray
    gold_mats: list  # (m, n) int64 gold matrix of every train document


def deplain_web(cfg: Any, data: Path = DATA) -> Prepared:
    """Train and dev of ``data`` prepared for ``cfg`` (a ``CRFConfig``), without an encoder."""
    from alignment_engine.crf_aligner import fit_normalisation, prepare_docs
    from alignment_engine.gold import gold_by_pair, gold_matrix
    from alignment_engine.io import read_alignment_tsv, read_pairs_jsonl

    tp, tg = read_pairs_jsonl(data / "train_pairs.jsonl"), read_alignment_tsv(data / "train_gold.tsv")
    dp, dg = read_pairs_jsonl(data / "dev_pairs.jsonl"), read_alignment_tsv(data / "dev_gold.tsv")
    pos, _ = gold_by_pair(tg)
    docs = prepare_docs(tp, cfg, None)
    norm = fit_normalisation(docs, cfg)
    gold_mats = [gold_matrix(d.pair, pos.get(d.pair.pair_id, set())).astype(np.int64) for d in docs]
    return Prepared(tp, tg, dp, dg, pos, docs, prepare_docs(dp, cfg, None),
                    np.asarray(norm["mean"], dtype=np.float32), np.asarray(norm["scale"], dtype=np.float32), gold_mats)


def cell_table(prep: Prepared, channels: Callable[[int, Any], np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every cell of the train documents as rows: the default's features (``doc.lex``), the new channels
    ``channels(k, doc)`` ((m, n, c) for document k), the gold label, the document's index, and whether the cell is
    "hard" (its sentences share no word of 4 or more letters). For the channel experiments
    (``engine_token_channel.py``, ``engine_e5_finetune.py``)."""
    base, new, gold, group, hard = [], [], [], [], []
    for k, (doc, g) in enumerate(zip(prep.docs, prep.gold_mats, strict=True)):
        m, n = doc.shape
        base.append(doc.lex.reshape(m * n, -1))
        new.append(channels(k, doc).reshape(m * n, -1))
        gold.append(g.reshape(-1))
        group.append(np.full(m * n, k))
        sw = [{w.lower() for w in WORD.findall(s)} for s in doc.simple]
        cw = [{w.lower() for w in WORD.findall(c)} for c in doc.complex]
        hard.append(np.array([not (a & b) for a in sw for b in cw]))
    return (np.concatenate(base), np.concatenate(new), np.concatenate(gold), np.concatenate(group),
            np.concatenate(hard))


def print_channels(y: np.ndarray, hard: np.ndarray, channels: list[tuple[str, np.ndarray]]) -> None:
    """A Markdown table of each single channel's AUC / AP over the cells, and over the hard ones."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    print("| channel | AUC | AP | hard AUC | hard AP |\n|---|---|---|---|---|")
    for name, v in channels:
        print(f"| {name} | {roc_auc_score(y, v):.3f} | {average_precision_score(y, v):.3f} | "
              f"{roc_auc_score(y[hard], v[hard]):.3f} | {average_precision_score(y[hard], v[hard]):.3f} |")


def print_classifiers(y: np.ndarray, hard: np.ndarray, groups: np.ndarray,
                      variants: list[tuple[str, np.ndarray]]) -> None:
    """A Markdown table of a gradient-boosted cell classifier's out-of-fold AP / AUC (4 folds by ``groups``, the
    documents) on each variant's feature columns, and its AP over the hard cells."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import average_precision_score, roc_auc_score
    from sklearn.model_selection import GroupKFold

    print("| classifier features | OOF AP | OOF AUC | hard OOF AP |\n|---|---|---|---|")
    for name, feats in variants:
        p = np.zeros(len(y))
        for tr, te in GroupKFold(4).split(feats, y, groups):
            clf = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.08, random_state=0)
            p[te] = clf.fit(feats[tr], y[tr]).predict_proba(feats[te])[:, 1]
        print(f"| {name} | {average_precision_score(y, p):.4f} | {roc_auc_score(y, p):.4f} | "
              f"{average_precision_score(y[hard], p[hard]):.4f} |", flush=True)
