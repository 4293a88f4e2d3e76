from django.urls import URLPattern, URLResolver, include, path
from rest_framework.routers import DefaultRouter

from annotation import api

router = DefaultRouter()
router.register("jobs", api.JobViewSet, basename="labelingjob")

urlpatterns: list[URLPattern | URLResolver] = [
    path("answers/", api.answer, name="annotation-answer"),
    path("questions/<str:token>/context/", api.context, name="annotation-context"),
    path("evaluation/", include("annotation.evaluation.api_urls")),
    *router.urls,
]
