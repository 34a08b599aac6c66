from rest_framework import authentication, exceptions

from ops.throttling import TokenFailureThrottle

from .tokens import check_token, creator_lost_access


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer gcq_…`: acts as the token's creator, within the token's scope.

    An address whose tokens keep failing is throttled (429) before its token is looked at,
    so guessing meets a limit rather than endless 401s. Every call takes its place in the
    count before its token is looked at, and a call whose token is good gives it back: a
    burst of guesses sent at once is looked at no more than the limit allows."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0] != self.keyword:
            return None
        failures = TokenFailureThrottle()
        if not failures.allow_request(request, None):
            raise exceptions.Throttled(failures.wait())
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "The Authorization header must be 'Bearer <token>'."
            )
        token = check_token(header[1])
        if token is None:
            refusal = "The token is unknown or revoked."
        else:
            refusal = creator_lost_access(token)
        if refusal is not None:
            raise exceptions.AuthenticationFailed(refusal)
        failures.give_back()
        return (token.created_by, token)

    def authenticate_header(self, request):
        return self.keyword
