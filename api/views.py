"""The /api/v1/ endpoints: transport only; the work is in kb.services."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
)
from rest_framework import generics, mixins, renderers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotAuthenticated, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from api import serializers as s
from api.auth import may_publish
from api.errors import Conflict, InputRefused, PayloadTooLarge
from api.examples import diagnose_example
from api.filters import FindingFilterBackend, may_read_unpublished
from api.models import ApiToken, IdempotentReply, Scope
from api.pagination import FindingCursorPagination
from api.slack import diagnosis_blocks
from decisiontree.traceback import InputRejected
from kb.filtersets import FindingFilterSet, ValidationRunFilterSet
from kb.models import (
    Finding,
    Fix,
    FixFeedback,
    Flag,
    FrameworkRelease,
    Hardware,
    Host,
    LanguageModel,
    StoredDiagnosis,
    ValidationRun,
)
from kb.search import SearchResult, page_snippets
from kb.services import diagnosis, feedback, stored_diagnoses
from kb.services.records import add_new_samples
from kb.services.uploads import log_body_too_large, log_too_large_message


class SlackBlocksRenderer(renderers.JSONRenderer):
    """`?format=slack` or `Accept: application/vnd.slack.blocks+json`: blocks to post as is."""

    media_type = "application/vnd.slack.blocks+json"
    format = "slack"


def run_diagnosis(request: Request, data: dict[str, Any]) -> StoredDiagnosis:
    """Diagnose and store (the answer's `html_url` is its page); bad input is a 400."""
    try:
        return stored_diagnoses.diagnose_and_store(
            data["traceback"],
            **{
                name: data.get(name) or ""
                for name in ("launch_command", "gpu", "model", "framework", "framework_version")
            },
            answers=data.get("answers") or None,
            channel=StoredDiagnosis.Channel.API,
            user=request.user,
            requester=requester_of(request),
            read_from=data.get("read_from") or "",
        )
    except InputRejected as rejected:
        raise InputRefused(str(rejected)) from rejected
    except KeyError as unknown:
        if not data.get("answers"):
            raise
        # An answer to a question FixGraph never asks.
        raise ValidationError({"answers": [str(unknown.args[0])]}) from None


def refuse_large_upload(request: Request) -> None:
    """A whole log is a large upload: callers with a token only, up to the log limit."""
    if not request.content_type.startswith("multipart/form-data"):
        return
    if not isinstance(request.auth, ApiToken):
        raise PermissionDenied("Attaching a log needs an API token; paste `traceback` instead.")
    if log_body_too_large(request.META):
        raise PayloadTooLarge(log_too_large_message())


def requester_of(request: Request) -> str:
    token = request.auth
    return f"token:{token.pk} ({token.name or token.prefix})" if isinstance(token, ApiToken) else ""


def diagnose_examples() -> list[OpenApiExample]:
    """The starter knowledge base's answer to a pasted Triton-backend crash (api/examples)."""
    example = diagnose_example()
    if not example:
        return []
    return [
        OpenApiExample(
            "Triton backend on a DSA model, FP8 KV cache",
            value=example["request"],
            request_only=True,
        ),
        OpenApiExample(
            "Triton backend on a DSA model, FP8 KV cache",
            value=example["response"],
            response_only=True,
            media_type="application/json",
        ),
    ]


class DiagnoseView(generics.GenericAPIView):  # type: ignore[type-arg]
    """A pasted error in, ranked fixes out."""

    serializer_class = s.DiagnoseRequestSerializer  # the browsable API's form

    required_scopes = {"unsafe": Scope.READ}
    anonymous_actions = frozenset({"post"})  # with FIXGRAPH_ALLOW_ANONYMOUS_API
    throttle_scope = "diagnose"  # FIXGRAPH_API_RATE_DIAGNOSE, per token
    takes_log_file = True  # a body too large is told to send the log as `log`
    renderer_classes = [
        renderers.JSONRenderer,
        renderers.BrowsableAPIRenderer,
        SlackBlocksRenderer,
    ]

    @extend_schema(
        request=s.DiagnoseRequestSerializer,
        responses={
            (200, "application/json"): s.DiagnosisSerializer,
            (200, SlackBlocksRenderer.media_type): s.SlackMessageSerializer,
        },
        examples=diagnose_examples(),
    )
    def post(self, request: Request) -> Response:
        """Ranked fixes for a pasted error: `match`, `fixes`, `not_helpful`, `questions`."""
        refuse_large_upload(request)  # before the body is read
        serializer = s.DiagnoseRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        answer = run_diagnosis(request, data).answer
        if request.accepted_renderer.format == "slack":
            return Response(diagnosis_blocks(answer))
        return Response(answer)


class LaunchCheckView(generics.GenericAPIView):  # type: ignore[type-arg]
    """A launch command in, the known issues its setup meets out: before it runs."""

    serializer_class = s.LaunchCheckRequestSerializer  # the browsable API's form

    required_scopes = {"unsafe": Scope.READ}
    anonymous_actions = frozenset({"post"})  # with FIXGRAPH_ALLOW_ANONYMOUS_API
    throttle_scope = "diagnose"  # FIXGRAPH_API_RATE_DIAGNOSE, per token

    @extend_schema(request=s.LaunchCheckRequestSerializer, responses={200: s.LaunchCheckSerializer})
    def post(self, request: Request) -> Response:
        """The findings whose stated conditions this launch meets (`risks`, each with its
        fixes applied to the launch), flags no release knows, and the runbook's launch."""
        serializer = s.LaunchCheckRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        check = diagnosis.check_launch(
            data["launch_command"],
            **{
                name: data.get(name) or None
                for name in ("gpu", "model", "framework", "framework_version")
            },
        )
        answer = s.LaunchCheckSerializer(
            check, context={"launch_command": data["launch_command"]}
        ).data
        return Response(answer)


class FeedbackViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Whether a suggested fix helped: one vote per token (or login), fix and paste; it
    becomes ranking evidence. A second vote replaces the first; DELETE takes it back."""

    serializer_class = s.FeedbackSerializer
    required_scopes = {"safe": Scope.READ, "unsafe": Scope.READ}
    filter_backends: list[type] = []

    def get_queryset(self) -> QuerySet[FixFeedback]:
        if getattr(self, "swagger_fake_view", False):  # the schema, drawn without a voter
            return FixFeedback.objects.none()
        return feedback.votes_of(voter_of(self.request))

    @extend_schema(
        request=s.FeedbackRequestSerializer,
        responses={201: s.FeedbackSerializer, 200: s.FeedbackSerializer},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Vote: 201 for a new vote, 200 when it replaced your earlier one."""
        voter = voter_of(request)
        serializer = s.FeedbackRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        vote, created = feedback.vote(
            data["fix"],
            voter,
            helped=data["helped"],
            diagnosis=data["diagnosis"],
            fingerprint=data.get("fingerprint", ""),
            worked_instead_fix=data["worked_instead_fix"],
            worked_instead_text=data.get("worked_instead_text", ""),
            comment=data.get("comment", ""),
            context=data.get("context") or {},
            channel="api",
        )
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(s.FeedbackSerializer(vote).data, status=code)

    def perform_destroy(self, instance: FixFeedback) -> None:
        feedback.undo(instance.pk, voter_of(self.request))


def voter_of(request: Request) -> feedback.Voter:
    """The token, else the logged-in user: a vote always has someone behind it."""
    if isinstance(request.auth, ApiToken):
        return feedback.Voter.for_token(request.auth.pk, request.auth.user)
    try:
        return feedback.Voter.for_user(request.user)
    except feedback.NoVoter:
        raise NotAuthenticated("Feedback needs an API token (or a login).") from None


class SignatureDecisionView(APIView):
    required_scopes = {"unsafe": Scope.WRITE}

    @extend_schema(
        request=s.SignatureDecisionSerializer, responses={201: s.SignatureDecisionSerializer}
    )
    def post(self, request: Request) -> Response:
        """A reviewer rules that an error fingerprint is this finding (`link`) or is not
        (`split`); future reports with that fingerprint follow the ruling."""
        from kb.services.diagnosis import decide_signature

        serializer = s.SignatureDecisionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        decide_signature(
            data["fingerprint"],
            Finding.objects.get(pk=data["finding_id"]),
            decision=data["decision"],
            user=request.user,
        )
        return Response(serializer.data, status=status.HTTP_201_CREATED)


def published_needs_publish_scope(request: Request, finding: Finding, doing: str) -> None:
    """What changes a published finding's answers (its fixes run on hosts, its samples
    decide what it matches) is a reviewer's: the `publish` scope."""
    if finding.status == Finding.Status.PUBLISHED and not may_publish(request):
        raise PermissionDenied(f"{doing} to a published finding needs the `publish` scope.")


class FindingViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Findings: search and filter (published only, unless `status=` asks and the token
    has `write`); create and edit with `write` (every edit keeps history)."""

    serializer_class = s.FindingSerializer
    required_scopes = {"safe": Scope.READ, "unsafe": Scope.WRITE}
    anonymous_actions = frozenset({"list", "retrieve"})  # with FIXGRAPH_ALLOW_ANONYMOUS_API
    filter_backends = [FindingFilterBackend]  # the list's; kb.filtersets.FindingFilterSet
    filterset_class = FindingFilterSet
    pagination_class = FindingCursorPagination
    search_result: SearchResult | None = None

    @property
    def throttle_scope(self) -> str:
        """Searching has its own budget (FIXGRAPH_API_RATE_SEARCH); reading one does not."""
        return "search" if self.action == "list" else ""

    def perform_create(self, serializer: BaseSerializer[Any]) -> None:
        """Without the `publish` scope a new finding is a draft, for a reviewer."""
        status_asked = serializer.validated_data.get("status", Finding.Status.DRAFT)
        if status_asked != Finding.Status.DRAFT and not may_publish(self.request):
            raise PermissionDenied(f"A {status_asked} finding needs the `publish` scope.")
        serializer.save(status=status_asked)

    def perform_update(self, serializer: BaseSerializer[Any]) -> None:
        status_asked = serializer.validated_data.get("status", serializer.instance.status)
        if status_asked != serializer.instance.status and not may_publish(self.request):
            raise PermissionDenied("Changing a finding's status needs the `publish` scope.")
        if serializer.validated_data.get("samples"):
            published_needs_publish_scope(self.request, serializer.instance, "Adding a sample")
        serializer.save()

    def get_queryset(self) -> QuerySet[Finding]:
        base = Finding.objects.select_related("model", "framework").prefetch_related(
            "gpus", "flag_settings", "fixes"
        )
        if self.action != "list" and not may_read_unpublished(self.request):
            return base.filter(status=Finding.Status.PUBLISHED)
        return base

    def filter_queryset(self, queryset: QuerySet[Finding]) -> QuerySet[Finding]:
        # Only the list is filtered: a finding read by id is not subject to `?status=`.
        return super().filter_queryset(queryset) if self.action == "list" else queryset

    def paginate_queryset(self, queryset: QuerySet[Finding]) -> list[Finding] | None:
        self.page_rows = super().paginate_queryset(queryset)
        return self.page_rows

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        result = self.search_result
        if self.action == "list" and result is not None and result.reading.terms:
            query = self.request.query_params.get("q", "")
            context["snippets"] = page_snippets(self.page_rows or [], query, result.reading)
        return context

    @extend_schema(methods=["GET"], responses={200: s.FixSerializer(many=True)})
    @extend_schema(methods=["POST"], request=s.FixSerializer, responses={201: s.FixSerializer})
    @action(
        detail=True,
        methods=["get", "post"],
        serializer_class=s.FixSerializer,
        filter_backends=[],  # the list's filters and pages are not this action's
        pagination_class=None,
    )
    def fixes(self, request: Request, pk: str | None = None) -> Response:
        """A finding's fixes, in order; POST (scope `write`) adds one."""
        finding = self.get_object()
        if request.method == "GET":
            return Response(s.FixSerializer(finding.fixes.all(), many=True).data)
        # A published finding's fixes can run on GPU hosts: a reviewer adds them.
        published_needs_publish_scope(request, finding, "Adding a fix")
        serializer = s.FixSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        serializer.save(finding=finding)
        return Response(serializer.data, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["GET"], responses={200: s.SampleSerializer(many=True)})
    @extend_schema(
        methods=["POST"],
        request=s.SampleSerializer,
        responses={201: s.SampleSerializer, 200: s.SampleSerializer},
    )
    @action(
        detail=True,
        methods=["get", "post"],
        serializer_class=s.SampleSerializer,
        filter_backends=[],
        pagination_class=None,
    )
    def samples(self, request: Request, pk: str | None = None) -> Response:
        """A finding's error samples, what pastes are matched against; POST (scope
        `write`) adds one: 201, or 200 with the sample when the finding holds that text."""
        finding = self.get_object()
        held = finding.samples.select_related("signature").order_by("pk")
        if request.method == "GET":
            return Response(s.SampleSerializer(held, many=True).data)
        # A published finding's samples decide what pastes it answers: a reviewer adds them.
        published_needs_publish_scope(request, finding, "Adding a sample")
        serializer = s.SampleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        text = serializer.validated_data["text"]
        added = add_new_samples(finding, [text])
        sample = added[0] if added else held.get(text=text)
        code = status.HTTP_201_CREATED if added else status.HTTP_200_OK
        return Response(s.SampleSerializer(sample).data, status=code)

    @extend_schema(responses={200: s.FindingHistorySerializer(many=True)})
    @action(
        detail=True,
        methods=["get"],
        serializer_class=s.FindingHistorySerializer,
        filter_backends=[],
        pagination_class=None,
    )
    def history(self, request: Request, pk: str | None = None) -> Response:
        """Every saved version of the finding, newest first, with who changed what."""
        from kb.services.history import finding_edits

        rows = [
            {
                "history_id": edit.history_id,
                "history_date": edit.date,
                "history_type": edit.kind,
                "history_user": edit.user,
                "title": edit.title,
                "status": edit.status,
                "changed_fields": list(edit.changed),
            }
            for edit in finding_edits(self.get_object())
        ]
        return Response(s.FindingHistorySerializer(rows, many=True).data)


class ReadOnly(viewsets.ReadOnlyModelViewSet):  # type: ignore[type-arg]
    required_scopes = {"safe": Scope.READ}
    filter_backends: list[type] = []


class HardwareViewSet(ReadOnly):
    """GPUs as `nvidia-smi` names them, with architecture and memory."""

    queryset = Hardware.objects.all()
    serializer_class = s.GpuSerializer


class LanguageModelViewSet(ReadOnly):
    queryset = LanguageModel.objects.all()
    serializer_class = s.LanguageModelSerializer


class FrameworkReleaseViewSet(ReadOnly):
    queryset = FrameworkRelease.objects.all()
    serializer_class = s.FrameworkReleaseSerializer


@extend_schema(parameters=[OpenApiParameter("framework", str, enum=["sglang", "vllm"])])
class FlagViewSet(ReadOnly):
    """Launch flags per framework, under their newest spelling."""

    serializer_class = s.FlagSerializer

    def get_queryset(self) -> QuerySet[Flag]:
        framework = self.request.query_params.get("framework", "")
        flags = Flag.objects.all()
        return flags.filter(framework=framework) if framework else flags


class HostViewSet(ReadOnly):
    queryset = Host.objects.all()
    serializer_class = s.HostSerializer


class ValidationRunViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Runs of fixes on GPU hosts. POST (scope `validate`) queues one; send `Idempotency-Key`."""

    queryset = ValidationRun.objects.select_related("host", "fix")
    serializer_class = s.ValidationRunSerializer
    required_scopes = {"safe": Scope.READ, "unsafe": Scope.VALIDATE}
    filterset_class = ValidationRunFilterSet  # as the Validation page filters them

    @extend_schema(
        request=s.ValidationRunRequestSerializer,
        responses={202: s.ValidationRunSerializer},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
    )
    def create(self, request: Request) -> Response:
        key = request.headers.get("Idempotency-Key", "").strip()[:200]
        if key:
            replay = idempotent_replay(request, key)
            if replay is not None:
                return replay
        serializer = s.ValidationRunRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with transaction.atomic():
            run = queue_validation(serializer, request)
            reply = self.get_serializer(run).data
            if key:
                remember_reply(request, key, status.HTTP_202_ACCEPTED, reply)
        # str(): the URL is DRF's Hyperlink, a str subclass that WSGI servers refuse in headers.
        location = str(reply["url"])
        return Response(reply, status=status.HTTP_202_ACCEPTED, headers={"Location": location})

    @extend_schema(request=None, responses={200: s.ValidationRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a queued or running run (scope `validate`); a server it started is stopped
        at the worker's next check. 409 when the run has already ended."""
        from kb.services import validation

        run = self.get_object()
        if not validation.cancel(run.pk):
            run.refresh_from_db()
            raise Conflict(f"Run {run.pk} has already ended: {run.get_status_display()}.")
        run.refresh_from_db()
        return Response(self.get_serializer(run).data)


def queue_validation(serializer: BaseSerializer[Any], request: Request) -> ValidationRun:
    """Queue through the service: it refuses unreviewed fixes and unvetted environment,
    and the run's `command` shows what will be launched before anything runs."""
    from kb.services import validation

    data = serializer.validated_data
    user = request.user if request.user.is_authenticated else None
    try:
        return validation.start(Fix.objects.get(pk=data["fix_id"]), data["host"], by=user)
    except validation.ValidationRefused as exc:
        raise InputRefused(str(exc)) from exc


def request_digest(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, default=str)
    return hashlib.sha256(f"{request.path}\n{body}".encode()).hexdigest()


def idempotent_replay(request: Request, key: str) -> Response | None:
    token = request.auth if isinstance(request.auth, ApiToken) else None
    stored = IdempotentReply.objects.filter(token=token, key=key).first()
    if stored is None:
        return None
    if stored.request_digest != request_digest(request):
        raise Conflict("This Idempotency-Key was already used for a different request.")
    return Response(stored.body, status=stored.status_code, headers={"Idempotent-Replay": "true"})


def remember_reply(request: Request, key: str, code: int, body: dict[str, Any]) -> None:
    token = request.auth if isinstance(request.auth, ApiToken) else None
    try:
        with transaction.atomic():
            IdempotentReply.objects.create(
                token=token,
                key=key,
                path=request.path,
                request_digest=request_digest(request),
                status_code=code,
                body=body,
            )
    except IntegrityError as exc:
        # A concurrent request with the same key won; this one must not queue a second run.
        raise Conflict("A request with this Idempotency-Key is already in progress.") from exc
