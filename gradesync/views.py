from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from activities import registry
from lti.access import granted_contexts
from lti.models import Role

from .models import GradeSync
from .services import retry_now


@require_POST
def retry(request: HttpRequest, sync_id: int) -> HttpResponse:
    """Staff of the course retry a delivery now."""
    sync = get_object_or_404(GradeSync.objects.select_related("placement"), pk=sync_id)
    if granted_contexts(request).get(sync.placement.context_id) != Role.STAFF:
        raise PermissionDenied(_("Only the course's instructors can retry grade delivery."))
    retry_now(sync)
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(back)
    return redirect(registry.kind_of(sync.placement).manage_url(sync.placement))
