"""Pipeline pages under the site root (``pipeline:<name>``): the import upload, jobs, model versions, exports and corpus statistics."""

from django.urls import path

from pipeline import views_diff, views_exports, views_imports, views_jobs, views_models

app_name = "pipeline"
urlpatterns = [
    path("import/", views_imports.import_upload, name="import_upload"),
    path("jobs/", views_jobs.job_list, name="job_list"),
    path("jobs/start/", views_jobs.job_start, name="job_start"),
    path("jobs/<int:job_id>/", views_jobs.job_detail, name="job_detail"),
    path("jobs/<int:job_id>/progress/", views_jobs.job_progress, name="job_progress"),
    path("jobs/<int:job_id>/cancel/", views_jobs.job_cancel, name="job_cancel"),
    path("models/", views_models.model_list, name="model_list"),
    path("models/diff/", views_diff.diff_page, name="run_diff"),
    path("models/<int:version_id>/", views_models.model_detail, name="model_detail"),
    path("models/<int:version_id>/promote/", views_models.model_promote, name="model_promote"),
    path("exports/", views_exports.export_list, name="export_list"),
    path("exports/<int:dataset_id>/", views_exports.export_detail, name="export_detail"),
    path("exports/<int:dataset_id>/files/<str:name>", views_exports.export_download, name="export_download"),
    path("exports/<int:dataset_id>/stats/", views_exports.export_stats, name="export_stats"),
    path("corpora/<int:corpus_id>/stats/", views_exports.corpus_stats, name="corpus_stats"),
]
