from django.urls import URLPattern, URLResolver, path

from annotation.evaluation import views

app_name = "evaluation"
urlpatterns: list[URLPattern | URLResolver] = [
    path("", views.home, name="home"),
    path("new/", views.study_new, name="new"),
    path("<int:study_id>/", views.study_detail, name="detail"),
    path("<int:study_id>/edit/", views.study_edit, name="edit"),
    path("<int:study_id>/results/", views.study_results, name="results"),
    path("<int:study_id>/export/", views.study_export, name="export"),
    path("<int:study_id>/exports/<int:number>/<str:name>", views.export_file, name="export_file"),
    path("<int:study_id>/rate/", views.rate, name="rate"),
    path("<int:study_id>/submit/", views.submit_form, name="submit"),
    path("<int:study_id>/instructions/", views.instructions, name="instructions"),
]
