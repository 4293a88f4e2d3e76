from django.urls import path

from curation import views

app_name = "curation"
urlpatterns = [
    path("corpora/", views.corpus_list, name="corpus_list"),
    path("corpora/<int:corpus_id>/", views.corpus_detail, name="corpus_detail"),
    path("articles/<int:article_id>/", views.article_detail, name="article_detail"),
    path("pairs/<int:pair_id>/", views.pair_detail, name="pair_detail"),
]
