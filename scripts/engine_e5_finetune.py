"""Does fine-tuning the sentence encoder on the training gold sharpen the semantic channels? (Round 20.)

    python scripts/engine_e5_finetune.py [--data ../shared/data/deplain-web] [--top-layers 4] [--epochs 3]

multilingual-e5-small's lower layers stay frozen (their output is computed once per sentence); its top
``--top-layers`` layers are fine-tuned on the gold of DEplain-web train, one document pair per step: the cosines of
all its simple x complex sentences, scaled by a learned temperature and shifted by a learned bias, are the logits of
a binary cross-entropy against the gold matrix. Cross-fitted like the CRFs (4 folds by document): every train
document is embedded by an encoder fine-tuned on the other three folds. Printed: the AUC / AP of the cell's cosine
(base and fine-tuned, on all cells and on the "hard" ones, whose sentences share no word of 4+ letters), then the
out-of-fold average precision of a gradient-boosted cell classifier (4 folds by document) on the default's
features, with the fine-tuned channels added, and with them replacing the base semantic channels.

``--dump F`` writes the out-of-fold table for ``scripts/engine_e5_train_with.py`` instead; ``--in-fold-dump G``
writes every sentence from the encoder fine-tuned on all of train (train sentences in fold; without ``--dump`` the
four folds are skipped; Round 28: in fold, dev falls).
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def lower_states(net, texts: list[str], frozen: int) -> dict[str, torch.Tensor]:
    """text -> (T, hidden) states after the first ``frozen`` layers (no padding: texts of one length together)."""
    import torch

    out = {}
    with torch.inference_mode():
        for idx, ids in net.same_length_batches(texts, 64):
            x = net.input_states(ids)
            for layer in net.layers[:frozen]:
                x = layer(x, None)
            for k, i in enumerate(idx):
                out[texts[i]] = x[k].clone()
    return out


def top_embed(layers, states: list, proj=None) -> torch.Tensor:
    """(B, hidden) normalised mean-pooled embeddings of B texts' lower states through ``layers`` (padded, masked),
    then through the linear map ``proj`` if one is given."""
    import torch

    lens = [s.shape[0] for s in states]
    t = max(lens)
    x = torch.zeros(len(states), t, states[0].shape[1])
    keep = torch.zeros(len(states), t, dtype=torch.bool)
    for k, s in enumerate(states):
        x[k, :lens[k]] = s
        keep[k, :lens[k]] = True
    mask = keep[:, None, None, :]
    for layer in layers:
        x = layer(x, mask)
    pooled = (x * keep[..., None]).sum(1) / keep.sum(1, keepdim=True)
    if proj is not None:
        pooled = proj(pooled)
    return torch.nn.functional.normalize(pooled, dim=-1)


def embed_all(layers, lower: dict, texts: list[str], proj=None) -> dict[str, np.ndarray]:
    import torch

    out: dict[str, np.ndarray] = {}
    order = sorted(texts, key=lambda t: lower[t].shape[0])
    with torch.inference_mode():
        for start in range(0, len(order), 64):
            batch = order[start:start + 64]
            emb = top_embed(layers, [lower[t] for t in batch], proj).numpy()
            out.update(zip(batch, emb, strict=True))
    return out


def finetune(net, lower: dict, docs: list, golds: list, frozen: int, epochs: int, lr: float, seed: int,
             projection: bool = False):
    """A copy of ``net``'s layers from ``frozen`` on (and a linear map after the pooling, initially the identity, if
    ``projection``), fine-tuned on the documents ``docs`` with gold ``golds``."""
    import torch

    torch.manual_seed(seed)
    layers = copy.deepcopy(net.layers[frozen:])
    layers.train()
    proj = None
    params = [*layers.parameters()]
    if projection:
        proj = torch.nn.Linear(net.hidden, net.hidden)
        with torch.no_grad():
            proj.weight.copy_(torch.eye(net.hidden))
            proj.bias.zero_()
        params += [*proj.parameters()]
    scale = torch.nn.Parameter(torch.tensor(20.0))
    bias = torch.nn.Parameter(torch.tensor(-16.0))
    opt = torch.optim.AdamW([*params, scale, bias], lr=lr, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    for _epoch in range(epochs):
        for k in rng.permutation(len(docs)):
            doc, g = docs[k], golds[k]
            if g.sum() == 0:
                continue
            emb = top_embed(layers, [lower[t] for t in (*doc.simple, *doc.complex)], proj)
            m = len(doc.simple)
            cos = emb[:m] @ emb[m:].T
            y = torch.from_numpy(g.astype(np.float32))
            pw = torch.tensor(float(np.sqrt((y.numel() - y.sum().item()) / max(y.sum().item(), 1.0))))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(scale * cos + bias, y, pos_weight=pw)
            opt.zero_grad()
            loss.backward()
            opt.step()
    layers.eval()
    return layers, proj


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "deplain-web"))
    ap.add_argument("--top-layers", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--projection", action="store_true", help="also learn a linear map after the pooling")
    ap.add_argument("--dump", default=None, help="write the train sentences' out-of-fold embeddings and the dev "
                    "sentences' (from an encoder fine-tuned on all of train) to this .npz, then stop")
    ap.add_argument("--in-fold-dump", default=None, help="write every sentence's embedding from the encoder fine-tuned "
                    "on all of train (train sentences in fold) to this .npz, then stop (alone: without the folds)")
    args = ap.parse_args()
    import torch
    from sklearn.model_selection import GroupKFold

    sys.path.insert(0, str(ROOT / "scripts"))
    from engine_data import cell_table, deplain_web, print_channels, print_classifiers

    from alignment_engine.crf_aligner import config_feature_names
    from alignment_engine.crf_config import CRFConfig
    from alignment_engine.semantic import network, semantic_features

    torch.set_num_threads(args.threads)
    cfg = CRFConfig()
    t0 = time.perf_counter()
    prep = deplain_web(cfg, Path(args.data))
    net = network()
    frozen = len(net.layers) - args.top_layers
    texts = sorted({s for d in prep.docs for s in (*d.simple, *d.complex)})
    lower = lower_states(net, texts, frozen)
    print(f"lower states of {len(texts)} sentences: {time.perf_counter() - t0:.0f} s", flush=True)
    n_docs = len(prep.docs)
    doc_fold = np.zeros(n_docs, dtype=np.int64)
    for f, (_, te) in enumerate(GroupKFold(4).split(np.zeros(n_docs), groups=np.arange(n_docs))):
        doc_fold[te] = f
    oof: dict[tuple[int, str], np.ndarray] = {}
    for f in range(0 if args.in_fold_dump and not args.dump else 4):
        t1 = time.perf_counter()
        train_idx = [k for k in range(n_docs) if doc_fold[k] != f]
        layers, proj = finetune(net, lower, [prep.docs[k] for k in train_idx],
                                [prep.gold_mats[k] for k in train_idx], frozen, args.epochs, args.lr, seed=f,
                                projection=args.projection)
        held = [k for k in range(n_docs) if doc_fold[k] == f]
        emb = embed_all(layers, lower, sorted({s for k in held for s in (*prep.docs[k].simple, *prep.docs[k].complex)}),
                        proj)
        for k in held:
            for s in (*prep.docs[k].simple, *prep.docs[k].complex):
                oof[(k, s)] = emb[s]
        print(f"fold {f}: {time.perf_counter() - t1:.0f} s", flush=True)
    if args.dump or args.in_fold_dump:
        t1 = time.perf_counter()
        layers, proj = finetune(net, lower, prep.docs, prep.gold_mats, frozen, args.epochs, args.lr, seed=4,
                                projection=args.projection)
        dev_texts = sorted({s for d in prep.dev_docs for s in (*d.simple, *d.complex)} - set(texts))
        lower.update(lower_states(net, dev_texts, frozen))
        dev_emb = embed_all(layers, lower, dev_texts, proj)
        keys = sorted({*texts, *dev_emb})

        def save(path: str, table: dict[str, np.ndarray]) -> None:
            np.savez(path, texts=np.array(keys, dtype=object), emb=np.stack([table[t] for t in keys]))

        if args.dump:  # train sentences out of fold
            save(args.dump, {**{s: v for (_, s), v in oof.items()}, **dev_emb})
        if args.in_fold_dump:  # train sentences from the same encoder as dev
            save(args.in_fold_dump, {**embed_all(layers, lower, texts, proj), **dev_emb})
        print(f"final fine-tuning and dev: {time.perf_counter() - t1:.0f} s; {len(keys)} texts in "
              f"{' and '.join(p for p in (args.dump, args.in_fold_dump) if p)}")
        return
    sem_idx = [i for i, name in enumerate(config_feature_names(cfg)) if name.startswith("sem_")]

    def tuned(k: int, doc) -> np.ndarray:
        return semantic_features(np.stack([oof[(k, s)] for s in doc.simple]),
                                 np.stack([oof[(k, c)] for c in doc.complex]), cfg.span_emission_widths)

    x, xn, y, groups, h = cell_table(prep, tuned)
    print(f"{len(y)} cells, {int(y.sum())} gold, {int(y[h].sum())} of them hard; {time.perf_counter() - t0:.0f} s")
    names = config_feature_names(cfg)
    print_channels(y, h, [("sem_cos (base)", x[:, names.index("sem_cos")]), ("sem_cos (fine-tuned, OOF)", xn[:, 0])])
    no_sem = np.delete(x, sem_idx, axis=1)
    print_classifiers(y, h, groups, [("the default's", x), ("the default's + fine-tuned channels", np.hstack([x, xn])),
                                     ("fine-tuned channels instead of the base ones", np.hstack([no_sem, xn]))])


if __name__ == "__main__":
    main()
