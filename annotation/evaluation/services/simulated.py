"""Simulated raters through the real services (command line ``evaluation_study simulate``):
raters of known bias and noise rate a study's pages with ``next_page`` and ``submit_page``,
each rater on a simulated clock that spends at least ``min_seconds`` per page. Careless raters score
slider controls like ordinary versions (and get flagged)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from accounts.roles import Role, grant
from annotation.evaluation.designs import DESIGNS
from annotation.evaluation.services import assignment, rating
from annotation.models import EvalOutput, Study, StudyRater


@dataclass(frozen=True)
class SimulatedRater:
    username: str
    bias: float  # in scale units
    noise: float
    careless: bool = False


def default_quality(study: Study) -> dict[str, float]:
    """Known quality per system when none is given: spread over the middle of the scale in the
    order of the system names (first = best)."""
    dim = DESIGNS[study.design].dimensions[0]
    lo, hi = dim.minimum + 0.25 * (dim.maximum - dim.minimum), dim.maximum - 0.15 * (dim.maximum - dim.minimum)
    n = len(study.systems)
    return {s: hi - (hi - lo) * k / max(n - 1, 1) for k, s in enumerate(study.systems)}


def make_raters(n: int, careless: int, span: float, seed: int, prefix: str = "sim-rater") -> list[SimulatedRater]:
    rng = np.random.default_rng(seed)
    return [SimulatedRater(f"{prefix}-{k}", float(rng.normal(0, 0.08 * span)), float(rng.uniform(0.08, 0.2) * span), k < careless)
            for k in range(n)]


def _user(name: str) -> User:
    user, created = get_user_model().objects.get_or_create(username=name)
    if created:
        user.set_unusable_password()
        user.save()
        grant(user, Role.ANNOTATOR)
    return user


def run(study: Study, raters: list[SimulatedRater], quality: dict[str, float], seed: int = 0, max_pages: int = 100_000) -> int:
    """Let every rater rate until nothing is left for them (excluded raters are skipped); returns pages submitted."""
    design = DESIGNS[study.design]
    rng = np.random.default_rng(seed)
    users = [(r, _user(r.username)) for r in raters]
    control_ids = set(EvalOutput.objects.filter(item__study=study, is_control=True).values_list("pk", flat=True))
    system_of = dict(EvalOutput.objects.filter(item__study=study).values_list("pk", "system"))
    submitted = 0
    # each rater's simulated time of their last answer, from an earlier run too (its clock ran ahead of the real one)
    clock: dict[str, datetime] = {
        name: at for name, at in StudyRater.objects.filter(study=study, rater__username__in=[r.username for r in raters])
        .values_list("rater__username", "last_answer_at") if at is not None
    }
    active = list(users)
    while active and submitted < max_pages:
        still = []
        for r, user in active:
            try:
                page = assignment.next_page(study, user)
            except assignment.RaterExcluded:  # a rater excluded after an earlier run rates no more
                continue
            if page is None:
                continue
            ratings = []
            for pos, pk in enumerate(page.order):
                values = {}
                for d, dim in enumerate(design.dimensions):
                    span = dim.maximum - dim.minimum
                    if pk in control_ids and not r.careless:
                        value = rng.uniform(dim.minimum, dim.minimum + 0.15 * span)
                    else:
                        base = quality[system_of[pk]] if pk not in control_ids else quality[min(quality, key=quality.get)]  # type: ignore[arg-type]
                        value = base - 0.05 * span * d + r.bias + rng.normal(0, r.noise)
                    value = float(np.clip(value, dim.minimum, dim.maximum))
                    values[dim.key] = value if dim.level == "interval" else int(round(value))
                ratings.append({"position": pos, "values": values})
            start = max(page.served_at, clock.get(r.username, page.served_at))
            now = start + timedelta(seconds=study.min_seconds + float(rng.uniform(0.5, 1.5 * study.min_seconds + 2)))
            rating.submit_page(user, page.token, ratings, now=now)
            clock[r.username] = now
            submitted += 1
            still.append((r, user))
        active = still
    return submitted
