from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from accounts.forms import LoginForm
from config.views import SchemaView, favicon, home

urlpatterns = [
    path("", home, name="home"),
    path("favicon.ico", favicon),
    path("login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("curation.urls")),
    path("", include("pipeline.urls")),
    path("annotate/evaluation/", include("annotation.evaluation.urls")),
    path("annotate/", include("annotation.urls")),
    path("api/", include("curation.api_urls")),
    path("api/annotation/", include("annotation.api_urls")),
    path("api/pipeline/", include("pipeline.api_urls")),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", login_required(SpectacularSwaggerSplitView.as_view(url_name="schema")), name="api-docs"),
]

handler400 = "config.views.bad_request"
handler404 = "config.views.not_found"
