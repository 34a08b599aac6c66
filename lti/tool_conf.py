"""pylti1p3's tool configuration over our models (decision 8).

pylti1p3 (the maintained ``pylti1p3next`` distribution) reads registrations through a
``ToolConfAbstract``: here it finds our ``Registration`` and ``Deployment`` rows, active
ones only, always by issuer *and* client id (several registrations may share an issuer).
The tool's key is not one per registration as in the library's examples but ours, rotated
in stages (lti.keys): the registration the library sees signs with the active key, names its
``kid``, and the JWKS publishes every key a platform may still meet.
"""

from __future__ import annotations

from typing import Any

from pylti1p3.deployment import Deployment as LibraryDeployment
from pylti1p3.registration import Registration as LibraryRegistration
from pylti1p3.request import Request
from pylti1p3.tool_config import ToolConfAbstract

from .keys import published_jwks, signing_key
from .models import Deployment, Registration
from .selectors import active_registrations


class ToolRegistration(LibraryRegistration):
    """A registration as pylti1p3 sees it, over our row; the tool's key is the active one."""

    def __init__(self, model: Registration) -> None:
        self.model = model
        self.set_issuer(model.issuer)
        self.set_client_id(model.client_id)
        self.set_key_set_url(model.keyset_url)
        self.set_auth_login_url(model.auth_login_url)
        self.set_auth_token_url(model.auth_token_url)
        if model.auth_audience:
            self.set_auth_audience(model.auth_audience)
        self._key = None

    def _signing(self) -> Any:
        if self._key is None:
            self._key = signing_key()
        return self._key

    def get_tool_private_key(self) -> str:
        return self._signing().private_key_pem

    def get_kid(self) -> str:
        # Moodle refuses a JWT without `kid` ("kid must be provided in JWT header").
        return self._signing().kid

    def get_jwks(self) -> list[dict[str, Any]]:
        return published_jwks()["keys"]


class ToolDeployment(LibraryDeployment):
    def __init__(self, model: Deployment) -> None:
        self.model = model
        self.set_deployment_id(model.deployment_id)


class ToolConf(ToolConfAbstract[Request]):
    """Registrations and deployments from the database; one issuer may have many clients."""

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def registrations_for_login(self, iss: str, client_id: str) -> list[ToolRegistration]:
        """The issuer's active registrations with the client id, or (without one) up to two
        of them: a login that names no client id is for an issuer with one registration."""
        return [ToolRegistration(model) for model, _ in active_registrations(iss, client_id)]

    def find_registration_by_issuer(self, iss: str, *args: Any, **kwargs: Any) -> Any:
        found = self.registrations_for_login(iss, "")
        return found[0] if len(found) == 1 else None

    def find_registration_by_params(
        self, iss: str, client_id: str, *args: Any, **kwargs: Any
    ) -> Any:
        return self.find_registration_and_deployment(iss, client_id, "")[0]

    def find_registration_and_deployment(
        self, iss: str, client_id: str, deployment_id: str
    ) -> tuple[ToolRegistration | None, Deployment | None]:
        """The active registration of the issuer and client id, and its deployment with that
        id, active or not (the launch says which it refuses): one statement for the launch's
        two look-ups."""
        if not client_id:
            return None, None
        for model, deployment in active_registrations(iss, client_id, deployment_id):
            return ToolRegistration(model), deployment
        return None, None

    def find_deployment(self, iss: str, deployment_id: str) -> ToolDeployment | None:
        return _deployment_of_an_active_registration(iss, deployment_id)

    def find_deployment_by_params(
        self, iss: str, deployment_id: str, client_id: str, *args: Any, **kwargs: Any
    ) -> ToolDeployment | None:
        """The deployment, active or not: the launch says which of the two it refuses."""
        return _deployment_of_an_active_registration(iss, deployment_id, client_id=client_id)

    def get_jwks(self, iss: str | None = None, client_id: str | None = None, **kwargs: Any) -> dict:
        """Every key a platform may meet (next, active, retiring), for any registration."""
        return published_jwks()


def _deployment_of_an_active_registration(
    iss: str, deployment_id: str, *, client_id: str | None = None
) -> ToolDeployment | None:
    """A deployment of an active registration of this issuer (and client id, when given)."""
    deployments = Deployment.objects.filter(
        registration__issuer=iss, registration__is_active=True, deployment_id=deployment_id
    )
    if client_id is not None:
        deployments = deployments.filter(registration__client_id=client_id)
    model = deployments.select_related("registration").first()
    return ToolDeployment(model) if model else None
