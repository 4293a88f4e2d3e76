from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "curation"
    verbose_name = "Corpora and curation"

    def ready(self) -> None:
        from curation import tasks_export  # noqa: F401  (registers curation.tasks.export_dataset)
