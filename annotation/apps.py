from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from curation import page_slots

        page_slots.contribute("nav", "annotation/_nav_labeling.html", order=10)
        page_slots.contribute("nav", "annotation/evaluation/_nav.html", order=15)
        page_slots.contribute("nav", "annotation/_nav_quality.html", order=30)
        page_slots.contribute("pair_detail", "annotation/_pair_detail.html", order=10)
