from django.urls import path

from kb import views

app_name = "kb"
urlpatterns = [
    path("", views.finding_list, name="finding-list"),
]
