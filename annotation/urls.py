from django.urls import URLPattern, URLResolver, path

from annotation import views_correct, views_jobs, views_label

app_name = "annotation"
# Correction, jobs and labeling (annotation-core).
urlpatterns: list[URLPattern | URLResolver] = [
    path("", views_jobs.home, name="home"),
    path("jobs/new/", views_jobs.job_new, name="job_new"),
    path("jobs/<int:job_id>/", views_jobs.job_detail, name="job_detail"),
    path("jobs/<int:job_id>/label/", views_label.label_page, name="label"),
    path("jobs/<int:job_id>/answer/", views_label.answer_form, name="answer_form"),
    path("jobs/<int:job_id>/instructions/", views_label.instructions, name="instructions"),
    path("q/<str:token>/context/", views_label.context_partial, name="context"),
    path("correct/", views_correct.correct_index, name="correct_index"),
    path("correct/<int:corpus_id>/next/", views_correct.correct_next, name="correct_next"),
    path("pairs/<int:pair_id>/correct/", views_correct.correct_pair, name="correct_pair"),
]

# Agreement, aggregation and verification (annotation-quality).
from annotation import views_quality, views_verify  # noqa: E402

urlpatterns += [
    path("stats/", views_quality.stats_index, name="stats_index"),
    path("jobs/<int:job_id>/stats/", views_quality.job_stats, name="job_stats"),
    path("jobs/<int:job_id>/aggregate/", views_quality.job_aggregate, name="job_aggregate"),
    path("verify/", views_verify.verify_index, name="verify_index"),
    path("verify/<int:job_id>/", views_verify.verify_job, name="verify_job"),
    path("verify/<int:job_id>/items/<int:item_id>/", views_verify.verify_save, name="verify_save"),
]
