"""Pipeline pages (included from curation/urls.py, so names are ``curation:<name>``)."""

from django.urls import path

from curation import views_jobs, views_models

urlpatterns = [
    path("jobs/", views_jobs.job_list, name="job_list"),
    path("jobs/start/", views_jobs.job_start, name="job_start"),
    path("jobs/<int:job_id>/", views_jobs.job_detail, name="job_detail"),
    path("jobs/<int:job_id>/progress/", views_jobs.job_progress, name="job_progress"),
    path("jobs/<int:job_id>/cancel/", views_jobs.job_cancel, name="job_cancel"),
    path("models/", views_models.model_list, name="model_list"),
    path("models/<int:version_id>/", views_models.model_detail, name="model_detail"),
    path("models/<int:version_id>/promote/", views_models.model_promote, name="model_promote"),
]
