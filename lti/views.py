"""LTI endpoints: OIDC login, launch, JWKS, deep linking, dynamic registration, demo.

Thin: each view reads the request, calls the LTI modules, and answers with a redirect,
a page, or a refusal page that says in plain words what was wrong (4xx, logged)."""

from __future__ import annotations

import logging
import secrets
from importlib import import_module
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    JsonResponse,
    QueryDict,
)
from django.middleware.csrf import rotate_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.cache import add_never_cache_headers
from django.utils.crypto import constant_time_compare
from django.utils.translation import gettext as _
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import claims as c
from . import deep_link_relay, handoff, oidc, spent_launch
from .access import grant_launch, placement_in_launch, sign_in
from .course import course_side
from .dynamic_registration import (
    RegistrationError,
    configuration_url_problem,
    register_with_platform,
    registration_form_token,
    registration_form_token_ok,
    tool_urls,
)
from .errors import LaunchError
from .launch import claimed_locale, validate_launch
from .middleware import allow_form_action, allow_framing_by
from .models import Registration, Role
from .roles import course_role
from .services import record_launch
from .tool_conf import ToolConf

logger = logging.getLogger(__name__)

DEEP_LINK_SESSION_KEY = "lti_deep_links"
AUTH_BACKEND = "lti.backends.CachedUserBackend"
# A cookie the login page in the LMS iframe sets and reads back, to learn whether the
# browser keeps the tool's cookies there.
COOKIE_CHECK = "lti_cookie_check"
RELAYED_FIELD = "lti_relayed"


def registration_key_ok(key: str) -> bool:
    """Dynamic registration is open only with the server's registration key (any platform
    that registers can sign launches and frame the tool), or in local DEBUG runs without one."""
    expected = settings.LTI_REGISTRATION_KEY
    if not expected:
        return settings.DEBUG
    return constant_time_compare(key, expected)


def tool_base_url(request: HttpRequest) -> str:
    return settings.LTI_TOOL_URL or request.build_absolute_uri("/")


def refuse(request: HttpRequest, error: LaunchError | str, status: int = 400) -> HttpResponse:
    """The refusal page, in the active language; the log says it in English."""
    if isinstance(error, LaunchError):
        message, status = error.message, error.status
        with translation.override("en"):
            logged = error.message
    else:
        message = logged = str(error)
    logger.warning("lti refused path=%s status=%s reason=%s", request.path, status, logged)
    return render(request, "lti/refused.html", {"message": message}, status=status)


def language_for_locale(locale: str) -> str | None:
    code = locale.replace("_", "-").split("-")[0].lower()
    return code if code in dict(settings.LANGUAGES) else None


@csrf_exempt
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
def login(request: HttpRequest) -> HttpResponse:
    params = request.POST if request.method == "POST" else request.GET
    base = tool_base_url(request)
    try:
        started = oidc.initiate_login(
            request, tool_base_url=base, launch_url=tool_urls(base)["launch"]
        )
    except LaunchError as error:
        return refuse(request, error)
    if started.login.storage_target:
        # The platform offers LTI platform storage: the state's proof lives there, not in a
        # (third-party, often blocked) cookie.
        return render(
            request,
            "lti/platform_storage_login.html",
            {
                "auth_url": started.auth_url,
                "storage": {
                    "target": started.login.storage_target,
                    "origin": started.auth_origin,
                    "key": f"state_{started.login.state}",
                    "value": started.login.storage_secret,
                },
            },
        )
    if _framed(request):
        # Inside the LMS page the browser may drop our cookie (third-party): the page checks
        # that it kept it before the platform's one-time login hint is spent, and if not
        # offers the same login in a new window, where the cookie is first-party.
        response = _login_check(request, params, started.auth_url)
        response.set_cookie(
            COOKIE_CHECK,
            "1",
            max_age=settings.LTI_STATE_TTL_SECONDS,
            path="/lti/",
            **{**oidc.cookie_options(), "httponly": False},  # read by lti/login_check.js
        )
        # The new window's login redirects to the platform, which CSP's form-action checks.
        allow_form_action(response, started.auth_url)
    else:
        if params.get(deep_link_relay.CHANNEL_FIELD):
            # The new window opened from the LMS dialog: a deep-linking answer picked here
            # goes back to the dialog's iframe.
            deep_link_relay.bind(params[deep_link_relay.CHANNEL_FIELD], params, started.login.state)
        response = HttpResponseRedirect(started.auth_url)
    started.cookies.update_response(response)
    return response


def _login_check(request: HttpRequest, params: QueryDict, auth_url: str) -> HttpResponse:
    """The login page inside the LMS iframe. Its new-window form repeats the platform's
    login initiation and names a return channel, whose secret only this page holds: a
    deep-linking answer picked in the new window comes back here (lti.deep_link_relay)."""
    login_params = [(name, params[name]) for name in oidc.LOGIN_PARAMS if params.get(name)]
    channel = deep_link_relay.open_channel(params)
    held = None
    if channel is not None:
        login_params.append((deep_link_relay.CHANNEL_FIELD, channel.channel))
        held = {
            "channel": channel.channel,
            "secret": channel.secret,
            "status_url": reverse("lti:return-channel-status"),
        }
    response = render(
        request,
        "lti/login_check.html",
        {"auth_url": auth_url, "login_params": login_params, "return_channel": held},
    )
    add_never_cache_headers(response)  # the channel's secret is for this page only
    return response


def _framed(request: HttpRequest) -> bool:
    """Whether the browser loads this page in a frame (Fetch Metadata)."""
    return request.headers.get("Sec-Fetch-Dest") in ("iframe", "frame")


def _relay_same_site(request: HttpRequest) -> HttpResponse:
    """The launch, posted once more from the tool's own page: the platform's cross-site form
    POST carries no SameSite=Lax state cookie (plain HTTP), a same-site POST does. The
    cookie still has to be in this browser, so the binding holds."""
    response = render(
        request,
        "lti/launch_relay.html",
        {
            "id_token": request.POST.get("id_token", ""),
            "state": request.POST.get("state", ""),
            "relayed_field": RELAYED_FIELD,
        },
    )
    add_never_cache_headers(response)
    return response


@csrf_exempt
@xframe_options_exempt
@require_POST
def launch(request: HttpRequest) -> HttpResponse:
    state = request.POST.get("state", "")
    cookie = request.COOKIES.get(oidc.STATE_COOKIE_PREFIX + state)
    storage_value = request.POST.get("lti_storage_value")
    base = tool_base_url(request)
    try:
        if cookie is None and storage_value is None:
            pending = oidc.peek_state(state)
            if pending is not None and pending.storage_target:
                return _platform_storage_check(request, pending)
            if (
                pending is not None
                and request.headers.get("Sec-Fetch-Site") == "cross-site"
                and RELAYED_FIELD not in request.POST
            ):
                return _relay_same_site(request)
        message = validate_launch(request, tool_base_url=base)
        if message.is_deep_linking and course_role(message.roles) != Role.STAFF:
            raise LaunchError(_("Only instructors can add activities to a course."), status=403)
        result = record_launch(message)
    except LaunchError as error:
        landed_at = spent_launch.landing_of(request, state)
        if landed_at is not None:
            # This browser's own launch, posted again (a reload without JavaScript).
            return HttpResponseRedirect(landed_at, status=303)
        # In the language of the launch where it names one (a Russian student reads a
        # Russian reason), else the browser's.
        language = language_for_locale(claimed_locale(request.POST.get("id_token", "")))
        with translation.override(language or translation.get_language()):
            return refuse(request, error)

    sign_in(request, result.user, AUTH_BACKEND)
    grant_launch(request, result.membership)
    language = language_for_locale(message.locale)
    if language:
        translation.activate(language)  # for the rest of the request: a page may be rendered
    if message.is_deep_linking:
        token = secrets.token_urlsafe(16)
        links = dict(request.session.get(DEEP_LINK_SESSION_KEY, {}))
        settings_claim = message.claim(c.DL_SETTINGS)
        links[token] = {
            "registration_id": message.registration.pk,
            "deployment_id": message.deployment.deployment_id,
            "return_url": settings_claim["deep_link_return_url"],
            "data": settings_claim.get("data"),
            # Set when the login came from the LMS dialog's iframe in a new window: the
            # answer goes back to that iframe.
            "return_channel": deep_link_relay.launched(
                state, message.login.return_channel, settings_claim["deep_link_return_url"]
            ),
        }
        request.session[DEEP_LINK_SESSION_KEY] = links
        landed_at = course_side().deep_linking_url(token)
        response = redirect(landed_at)
    else:
        # A dialog's iframe waiting on the login's channel stops.
        deep_link_relay.launched(state, message.login.return_channel, None)
        landing = course_side().landing(result.placement, result.membership)
        landed_at = landing.url
        if landing.page is not None and cookie is not None:
            # The state cookie came back, and the session's has the same attributes: this
            # browser keeps the tool's cookies where the launch runs, so the launch answers
            # with the page itself, one round trip fewer (decision 60). The page names its
            # address, which the browser shows and reloads.
            response = landing.page(request)
        elif request.headers.get("Sec-Fetch-Dest") != "document":
            # Embedded (or unknown), and a page not rendered here (the activity's page, a
            # dashboard) or a state proven by platform storage rather than a cookie: the
            # landing may arrive without its cookie.
            response = HttpResponseRedirect(handoff.with_handoff(request, landing.url, language))
        else:
            response = HttpResponseRedirect(landing.url)
    if language:
        _set_language_cookie(response, language)
    response.delete_cookie(oidc.STATE_COOKIE_PREFIX + state, path="/lti/")
    spent_launch.mark(response, state, landed_at)
    return response


def _set_language_cookie(response: HttpResponse, language: str) -> None:
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=365 * 24 * 3600,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )


def _platform_storage_check(request: HttpRequest, pending: oidc.LoginState) -> HttpResponse:
    registration = Registration.objects.filter(pk=pending.registration_id, is_active=True).first()
    if registration is None:
        return refuse(request, _("This platform's registration was removed during the launch."))
    auth = urlsplit(registration.auth_login_url)
    return render(
        request,
        "lti/platform_storage_launch.html",
        {
            "id_token": request.POST.get("id_token", ""),
            "state": pending.state,
            "storage": {
                "target": pending.storage_target,
                "origin": f"{auth.scheme}://{auth.netloc}",
                "key": f"state_{pending.state}",
            },
        },
    )


@require_GET
@cache_control(max_age=300, public=True)
def jwks(request: HttpRequest) -> JsonResponse:
    return JsonResponse(ToolConf().get_jwks())


@never_cache
@require_GET
def continue_in_window(request: HttpRequest, token: str) -> HttpResponse:
    """A launch's session, handed to a new window once (lti.handoff): the browser keeps the
    tool's cookie there, as a first-party one, where it dropped it in the LMS page. Only the
    tool's own page (or the address bar) may open it, not another site, and the session
    gets a new key there, so no one else holds it."""
    # A click on the tool's page is same-origin, an address typed in is "none"; a browser
    # that sends no Sec-Fetch-Site is not asked.
    if request.headers.get("Sec-Fetch-Site", "none") not in ("same-origin", "none"):
        return refuse(request, _("Open the activity from the tool's own page."), status=403)
    found = handoff.take(request, token)
    session_store = import_module(settings.SESSION_ENGINE).SessionStore
    if found is None or not session_store().exists(found.session_key):
        return refuse(
            request,
            _(
                "This link to open the activity in a new window has expired or was used "
                "already. Open the activity from your course again."
            ),
        )
    request.session = session_store(found.session_key)
    request.session.cycle_key()  # the session middleware sets its cookie on this response
    rotate_token(request)
    response = HttpResponseRedirect(found.next_url)
    if found.language:
        _set_language_cookie(response, found.language)
    return response


@csrf_exempt  # the LMS dialog's iframe keeps no cookie of ours: the channel's secret is the proof
@never_cache
@require_POST
def return_channel_status(request: HttpRequest) -> JsonResponse:
    """Whether the deep-linking answer picked in the new window is ready for the iframe
    holding the channel's secret (a wrong secret reads as an unknown channel: 404)."""
    found = deep_link_relay.status(request.POST.get("channel", ""), request.POST.get("secret", ""))
    status = 404 if found is deep_link_relay.Status.GONE else 200
    return JsonResponse({"status": found.value}, status=status)


@csrf_exempt  # as return_channel_status
@xframe_options_exempt
@never_cache
@require_POST
def return_channel_answer(request: HttpRequest) -> HttpResponse:
    """The deep-linking answer, taken once by the iframe that holds the channel's secret,
    which posts it to the LMS's return URL of the launch: the LMS's return page then runs
    in its own dialog."""
    answer = deep_link_relay.take(request.POST.get("channel", ""), request.POST.get("secret", ""))
    if answer is None:
        return refuse(
            request,
            _(
                "This choice has expired or was sent to your course already. "
                "Open the tool again from your course's activity picker."
            ),
            status=404,
        )
    response = render(
        request, "lti/deep_link_return.html", {"return_url": answer.return_url, "jwt": answer.jwt}
    )
    allow_form_action(response, answer.return_url)  # the form posts to the LMS
    return response


@csrf_exempt  # the platform's dialog frames this page cross-site, where our CSRF cookie is
# third-party and often dropped: the POST is protected by the registration key and a
# signed, short-lived form token bound to the platform's configuration URL instead.
@never_cache
@require_http_methods(["GET", "POST"])
def register(request: HttpRequest) -> HttpResponse:
    """LTI Dynamic Registration: the platform opens this page with openid_configuration and
    registration_token; the administrator confirms; we register and close the dialog.
    Open only with the server's registration key (or in a DEBUG run without one)."""
    params = request.POST if request.method == "POST" else request.GET
    key = params.get("key", "")
    if not registration_key_ok(key):
        logger.warning("dynamic registration refused: key missing or wrong")
        return render(
            request,
            "lti/registration_closed.html",
            {"key_configured": bool(settings.LTI_REGISTRATION_KEY)},
            status=403,
        )
    configuration_url = params.get("openid_configuration", "")
    if not configuration_url:
        return refuse(
            request,
            _(
                "This page is opened by your LMS during tool registration "
                "(the openid_configuration parameter is missing)."
            ),
        )
    if (problem := configuration_url_problem(configuration_url)) is not None:
        return refuse(request, problem)
    registration_token = params.get("registration_token", "")
    if request.method == "GET":
        response = render(
            request,
            "lti/register.html",
            {
                "openid_configuration": configuration_url,
                "registration_token": registration_token,
                "key": key,
                "form_token": registration_form_token(configuration_url, registration_token),
            },
        )
    elif not registration_form_token_ok(
        params.get("form_token", ""), configuration_url, registration_token
    ):
        response = refuse(
            request,
            _(
                "This registration form has expired or was not issued by this tool. "
                "Start the registration again from your LMS."
            ),
            status=403,
        )
    else:
        try:
            registration = register_with_platform(
                openid_configuration_url=configuration_url,
                registration_token=registration_token,
                tool_base_url=tool_base_url(request),
            )
        except RegistrationError as error:
            response = refuse(request, str(error), status=error.status)
        else:
            response = render(request, "lti/registered.html", {"registration": registration})
    # The platform that is registering shows this page in its dialog.
    allow_framing_by(response, configuration_url)
    return response


@require_POST
def roster_refresh(request: HttpRequest, placement_id: int) -> HttpResponse:
    """Staff ask for the course roster (NRPS) to be read again, in the background."""
    from .tasks import sync_roster

    found = placement_in_launch(request, placement_id)
    if found is None or found[1] != Role.STAFF:
        raise PermissionDenied(_("Only the course's instructors can refresh the roster."))
    try:
        sync_roster.delay(found[0].context_id)
    except Exception as error:  # the broker is down; nothing was changed
        logger.warning("roster refresh not queued context=%s error=%s", found[0].context_id, error)
        return refuse(request, _("The roster refresh could not be queued; try again shortly."), 503)
    return redirect(course_side().manage_url(found[0]))
