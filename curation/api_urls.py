from rest_framework.routers import DefaultRouter

from curation import api

router = DefaultRouter()
router.register("corpora", api.CorpusViewSet, basename="corpus")
router.register("articles", api.ArticleViewSet, basename="article")
router.register("documents", api.DocumentViewSet, basename="document")
router.register("pairs", api.DocumentPairViewSet, basename="documentpair")

urlpatterns = router.urls
