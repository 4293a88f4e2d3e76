"""The pipeline's API under /api/pipeline/: jobs, models, runs, exports (see pipeline/api.py)."""

from rest_framework.routers import DefaultRouter

from pipeline import api

router = DefaultRouter()
router.register("jobs", api.JobViewSet, basename="pipeline-job")
router.register("models", api.ModelVersionViewSet, basename="pipeline-model")
router.register("runs", api.RunViewSet, basename="pipeline-run")
router.register("exports", api.ExportViewSet, basename="pipeline-export")

urlpatterns = router.urls
