"""The minibatch training loop both CRFs share (``crf_aligner.train_crf``, ``semicrf.train_semicrf``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch


def adam_epochs(model: torch.nn.Module, batches: Mapping[str, Sequence[Any]], steps: Mapping[str, int],
                log_likelihood: Callable[[str, Any], torch.Tensor], epochs: int, lr: float, weight_decay: float,
                rng: np.random.Generator, progress: Callable[[str], None] | None, label: str) -> list[float]:
    """Adam over each direction's batches in a random order per epoch, lr decayed linearly to 10 %;
    the loss of a batch is minus its summed ``log_likelihood(direction, batch)`` over the direction's
    ``steps``. ``progress(message)`` once per epoch; returns the loss of every epoch (rounded)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    decay = max(int(epochs), 1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 - 0.9 * e / decay)
    losses: list[float] = []
    for epoch in range(epochs):
        total = 0.0
        for d, bs in batches.items():
            for k in rng.permutation(len(bs)):
                loss = -log_likelihood(d, bs[int(k)]).sum() / max(steps[d], 1)
                opt.zero_grad()
                loss.backward()  # type: ignore[no-untyped-call]
                opt.step()
                total += float(loss.detach())
        sched.step()
        losses.append(round(total, 5))
        if progress:
            progress(f"{label} epoch {epoch + 1}/{epochs} loss {total:.4f}")
    return losses
