from django.urls import URLPattern, URLResolver, path
from rest_framework.routers import DefaultRouter

from annotation.evaluation import api

router = DefaultRouter()
router.register("studies", api.StudyViewSet, basename="evaluation-study")

urlpatterns: list[URLPattern | URLResolver] = [
    path("answers/", api.answer, name="evaluation-answer"),
    *router.urls,
]
