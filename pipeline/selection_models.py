"""Model versions as the source of the uncertainty that chooses labeling-job items: the one place
that turns the promoted :class:`ModelVersion` of a language (or any trained version) into a model
directory for ``annotation.services.selection`` (registered in ``PipelineConfig.ready()``)."""

from __future__ import annotations

from annotation.services.selection import ModelSource, SelectionError
from pipeline.models import ModelVersion
from pipeline.services.registry import promoted_for


def model_choices(limit: int = 100) -> list[tuple[int, str]]:
    qs = ModelVersion.objects.filter(method="crf").exclude(path="").order_by("-created_at")[:limit]
    return [(v.pk, f"#{v.pk} {v.name} ({v.language}){' · promoted' if v.is_promoted else ''}") for v in qs]


def model_dir(language: str, version_id: int | None) -> tuple[str, str]:
    """``(model directory, name)`` of version ``version_id``, or of the promoted model of ``language``."""
    if version_id is None:
        version = promoted_for(language)
        if version is None:
            raise SelectionError(f"no promoted {language} model: promote a trained CRF version on the models page "
                                 "or choose every candidate / a random sample")
    else:
        version = ModelVersion.objects.filter(pk=version_id).first()
        if version is None:
            raise SelectionError(f"no model version #{version_id}")
    if version.method != "crf" or not version.path:
        raise SelectionError(f"model version #{version.pk} ({version.name}) is a {version.method} model without "
                             "posterior marginals; uncertainty needs a trained CRF version")
    return version.path, f"#{version.pk} {version.name}"


SOURCE = ModelSource(choices=model_choices, model_dir=model_dir)
