from django.urls import path

from curation import views_exports

urlpatterns = [
    path("exports/", views_exports.export_list, name="export_list"),
    path("exports/<int:dataset_id>/", views_exports.export_detail, name="export_detail"),
    path("exports/<int:dataset_id>/files/<str:name>", views_exports.export_download, name="export_download"),
    path("exports/<int:dataset_id>/stats/", views_exports.export_stats, name="export_stats"),
    path("corpora/<int:corpus_id>/stats/", views_exports.corpus_stats, name="corpus_stats"),
]
