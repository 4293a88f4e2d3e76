from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "pipeline"
    verbose_name = "Pipeline: jobs, models, alignment runs, exports"

    def ready(self) -> None:
        from curation import page_slots

        page_slots.contribute("nav", "pipeline/_nav_jobs.html", order=20)
        page_slots.contribute("nav", "pipeline/_nav_exports.html", order=40)
        page_slots.contribute("corpus_detail", "pipeline/_corpus_detail.html", order=20)
        page_slots.contribute("pair_detail_below", "pipeline/_pair_slot.html", order=60)

        from annotation.evaluation import sources
        from pipeline.evaluation_sources import SOURCE

        sources.register(SOURCE)  # evaluation studies can take items from an export's split

        from annotation.services import selection
        from pipeline import selection_models

        selection.register(selection_models.SOURCE)  # labeling jobs can choose items by the promoted model's uncertainty

        from django.conf import settings

        from alignment_engine import semantic

        semantic.use_store(settings.EMBEDDINGS_CACHE)  # a sentence embedded once stays embedded for later runs
