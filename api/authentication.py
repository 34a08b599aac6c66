from rest_framework import authentication, exceptions

from .tokens import check_token, creator_lost_access


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer gcq_…`: acts as the token's creator, within the token's scope."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0] != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "The Authorization header must be 'Bearer <token>'."
            )
        token = check_token(header[1])
        if token is None:
            raise exceptions.AuthenticationFailed("The token is unknown or revoked.")
        lost = creator_lost_access(token)
        if lost is not None:
            raise exceptions.AuthenticationFailed(lost)
        return (token.created_by, token)

    def authenticate_header(self, request):
        return self.keyword
