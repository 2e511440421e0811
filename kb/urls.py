from django.urls import path

from kb import views

app_name = "kb"
urlpatterns = [
    path("", views.finding_list, name="finding-list"),
    path("diagnose/", views.diagnose_page, name="diagnose"),
    path("check/", views.launch_check_page, name="launch-check"),
    path("diagnose/feedback/", views.fix_feedback, name="fix-feedback"),
    path("diagnose/draft/", views.start_finding, name="diagnose-draft"),
    path("diagnose/<str:slug>/", views.diagnosis_detail, name="diagnosis"),
    path("diagnose/<str:slug>/delete/", views.diagnosis_delete, name="diagnosis-delete"),
    path("feedback/<int:pk>/undo/", views.feedback_undo, name="feedback-undo"),
    path(
        "feedback/<int:pk>/worked-instead/",
        views.feedback_worked_instead,
        name="feedback-worked-instead",
    ),
    path("findings/<int:pk>/", views.finding_detail, name="finding-detail"),
    path(
        "findings/<int:pk>/samples/from-feedback/<int:vote_pk>/",
        views.learn_paste,
        name="learn-paste",
    ),
    path(
        "findings/<int:pk>/fixes/<int:fix_pk>/validate/",
        views.validate_fix,
        name="validate-fix",
    ),
    path("runs/", views.run_list, name="run-list"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", views.cancel_run, name="run-cancel"),
    path("runs/<int:pk>/again/", views.run_again, name="run-again"),
    path("runbook/", views.runbook, name="runbook"),
    path("runbook.md", views.runbook_markdown, name="runbook-markdown"),
    path("findings.md", views.findings_markdown, name="findings-markdown"),
    path("review/", views.review_queue, name="review-queue"),
    path("review/<int:pk>/", views.review_finding, name="review-finding"),
    path("review/<int:pk>/reject/", views.reject_finding, name="review-reject"),
    path("review/<int:pk>/merge/", views.merge_finding, name="review-merge"),
]
