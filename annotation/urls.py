from django.urls import URLPattern, URLResolver

app_name = "annotation"
urlpatterns: list[URLPattern | URLResolver] = []

# Agreement, aggregation and verification (annotation-quality).
from django.urls import path  # noqa: E402

from annotation import views_quality, views_verify  # noqa: E402

urlpatterns += [
    path("stats/", views_quality.stats_index, name="stats_index"),
    path("jobs/<int:job_id>/stats/", views_quality.job_stats, name="job_stats"),
    path("jobs/<int:job_id>/aggregate/", views_quality.job_aggregate, name="job_aggregate"),
    path("verify/", views_verify.verify_index, name="verify_index"),
    path("verify/<int:job_id>/", views_verify.verify_job, name="verify_job"),
    path("verify/<int:job_id>/items/<int:item_id>/", views_verify.verify_save, name="verify_save"),
]
