from django.urls import URLPattern, URLResolver

app_name = "annotation"
urlpatterns: list[URLPattern | URLResolver] = []
