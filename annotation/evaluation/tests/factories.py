"""Small studies for tests: a few source sentences, systems of different quality."""

from __future__ import annotations

from annotation.evaluation.importers import ItemInput
from annotation.evaluation.services import studies
from annotation.models import Study

SOURCES = [
    ("s1", "The city council approved a new budget on Tuesday after a long and heated debate.", "The city council approved a new budget."),
    ("s2", "Scientists discovered a new species of frog in the rainforest of Peru last year.", "Scientists found a new kind of frog in Peru."),
    ("s3", "Heavy rain caused severe flooding in several villages near the river this week.", "Rain flooded villages near the river."),
    ("s4", "The museum will open a new exhibition about ancient Egypt early next month.", "A museum will show things from ancient Egypt."),
    ("s5", "Engineers are testing a quieter engine that could make airplanes much less noisy.", "Engineers test a quiet engine for planes."),
    ("s6", "The company announced that it would hire hundreds of new workers in the spring.", "The company will hire many new workers."),
]
SYSTEMS = ("alpha", "beta", "gamma")


def outputs_for(key: str, source: str, reference: str) -> dict[str, str]:
    words = source.split()
    return {
        "alpha": reference,
        "beta": " ".join(words[: len(words) // 2 + 2]) + ".",
        "gamma": source,
    }


def items(n: int = 6, systems: tuple[str, ...] = SYSTEMS) -> list[ItemInput]:
    out = []
    for k in range(n):
        key, source, reference = SOURCES[k % len(SOURCES)]
        key = f"{key}-{k}" if k >= len(SOURCES) else key
        outs = outputs_for(key, source, reference)
        out.append(ItemInput(key, source, [reference], {s: outs[s] for s in systems}, k + 1))
    return out


def make_study(design: str = "likert", *, n_items: int = 6, raters: int = 3, min_seconds: int = 0, systems: tuple[str, ...] = SYSTEMS,
               **extra: object) -> Study:
    settings = studies.StudySettings(design=design, raters_per_item=raters, min_seconds=min_seconds, **extra)  # type: ignore[arg-type]
    return studies.create_study(f"{design} study", settings, items(n_items, systems), source_info={"file": "test"})


def full_ratings(study: Study, n: int, value: float | None = None) -> list[dict[str, object]]:
    from annotation.evaluation.designs import DESIGNS

    design = DESIGNS[study.design]
    out = []
    for pos in range(n):
        vals = {}
        for d in design.dimensions:
            vals[d.key] = value if value is not None else (d.minimum + d.maximum) // 2
        out.append({"position": pos, "values": vals})
    return out
