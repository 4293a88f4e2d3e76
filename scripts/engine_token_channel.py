"""Does a token-level channel of the sentence encoder add to the default's cell features? (Round 19.)

    python scripts/engine_token_channel.py [--data ../shared/data/deplain-web]

For every cell of DEplain-web train (181,229 cells, 2,378 gold pairs) it computes BERTScore-like channels from
multilingual-e5-small's token states (float32, the ``query: `` prefix and the special tokens left out): P, the
mean over the simple sentence's tokens of their best cosine to a token of the complex sentence; R, the same
from the complex side; F, their harmonic mean. It prints each channel's AUC and average precision next to the
default's ``sem_cos`` (on all cells and on the "hard" ones, whose sentences share no word of 4 or more letters),
then the out-of-fold average precision of a gradient-boosted classifier (4 folds by document) on the default's
cell features (``CRFConfig()``'s emission: lexical and semantic channels) with and without the new channels.
About 2 minutes on one core.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PREFIX = 4  # <s> and the pieces of "query:" (e5_small.token_ids)


def token_states(texts: list[str]) -> dict[str, np.ndarray]:
    """text -> (tokens, 384) L2-normalised last-layer states of the text's own tokens (float32)."""
    import torch

    from alignment_engine.semantic import network

    net = network()
    out: dict[str, np.ndarray] = {}
    with torch.inference_mode():
        for idx, ids in net.same_length_batches(texts, 64):
            length = ids.shape[1]
            own = slice(PREFIX, length - 1) if length - 1 > PREFIX else slice(1, max(length - 1, 2))
            states = net.token_states(ids)
            for k, i in enumerate(idx):
                out[texts[i]] = torch.nn.functional.normalize(states[k, own].float(), dim=-1).numpy()
    return out


def bertscore(simple: list[np.ndarray], complex_: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m, n) P, R, F of every cell of one document pair from its sentences' token states."""
    ls, lc = np.array([len(x) for x in simple]), np.array([len(x) for x in complex_])
    sim = np.concatenate(simple) @ np.concatenate(complex_).T
    s_start, c_start = np.r_[0, np.cumsum(ls)[:-1]], np.r_[0, np.cumsum(lc)[:-1]]
    prec = np.add.reduceat(np.maximum.reduceat(sim, c_start, axis=1), s_start, axis=0) / ls[:, None]
    rec = np.add.reduceat(np.maximum.reduceat(sim, s_start, axis=0), c_start, axis=1) / lc[None, :]
    return prec, rec, 2 * prec * rec / np.maximum(prec + rec, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "deplain-web"))
    args = ap.parse_args()
    import torch

    sys.path.insert(0, str(ROOT / "scripts"))
    from engine_data import cell_table, deplain_web, print_channels, print_classifiers

    from alignment_engine.crf_aligner import config_feature_names
    from alignment_engine.crf_config import CRFConfig

    torch.set_num_threads(1)
    cfg = CRFConfig()
    t0 = time.perf_counter()
    prep = deplain_web(cfg, Path(args.data))
    states = token_states(sorted({s for d in prep.docs for s in (*d.simple, *d.complex)}))
    x, xn, y, groups, h = cell_table(prep, lambda k, doc: np.stack(
        bertscore([states[s] for s in doc.simple], [states[c] for c in doc.complex]), -1))
    print(f"{len(y)} cells, {int(y.sum())} gold, {int(y[h].sum())} of them hard; {time.perf_counter() - t0:.0f} s")
    singles = [("sem_cos (the default's)", x[:, config_feature_names(cfg).index("sem_cos")])]
    singles += [(f"layer 12 {name}", xn[:, j]) for j, name in enumerate("PRF")]
    print_channels(y, h, singles)
    print_classifiers(y, h, groups, [("the default's", x), ("the default's + token channels", np.hstack([x, xn]))])


if __name__ == "__main__":
    main()
