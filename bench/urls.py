"""The service's addresses, and two constant pages that only the benchmark's process routes
(``bench.answer_cost`` sets this module as its ROOT_URLCONF): the cost of a page through
every middleware, and of one behind ``launch_required`` that reads the session and its
user, beside the loop's pages. The service never serves them."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from config.urls import urlpatterns as service_patterns
from lti.access import launch_required


def constant(request: HttpRequest) -> HttpResponse:  # noqa: ARG001 - a view's signature
    return HttpResponse("ok")


@launch_required
def signed_in_constant(request: HttpRequest) -> HttpResponse:  # noqa: ARG001
    return HttpResponse("ok")


urlpatterns = [
    path("bench/constant/", constant),
    path("bench/signed-in/", signed_in_constant),
    *service_patterns,
]
CONSTANT_PATH = "/bench/constant/"
SIGNED_IN_PATH = "/bench/signed-in/"
