"""Deep Linking 2.0: the signed LtiDeepLinkingResponse that places content items in a
course, by pylti1p3's ``DeepLink`` (the course side builds the items:
activities.deep_linking)."""

from __future__ import annotations

from typing import Any

from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource

from . import claims as c
from .models import Registration
from .tool_conf import ToolRegistration


class ContentItem(DeepLinkResource):
    """A content item the course side has built whole (activities.deep_linking): the
    library's resource with its dictionary as it is."""

    def __init__(self, item: dict[str, Any]) -> None:
        self._item = item

    def to_dict(self) -> dict[str, Any]:
        return self._item


class ToolDeepLink(DeepLink):
    """The library's response with its one audience as a string, as this tool has always
    sent it (RFC 7519 allows both; platforms and the suite's read a string), and without a
    `data` claim when the request had none (the library would send null, which the
    specification does not ask for)."""

    def get_message_jwt(self, resources: Any) -> dict[str, object]:
        message = super().get_message_jwt(resources)
        message["aud"] = self._registration.get_issuer()
        if message.get(c.DL_DATA) is None:
            message.pop(c.DL_DATA, None)
        return message


def response_jwt(
    *,
    registration: Registration,
    deployment_id: str,
    content_items: list[dict[str, Any]],
    data: str | None,
) -> str:
    """The LtiDeepLinkingResponse, signed with the tool's active key (its `kid` named)."""
    deep_link = ToolDeepLink(
        ToolRegistration(registration),
        deployment_id,
        {"data": data} if data is not None else {},
    )
    return deep_link.get_response_jwt([ContentItem(item) for item in content_items])
