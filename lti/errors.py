from __future__ import annotations

from django.utils.functional import Promise


class LaunchError(Exception):
    """An LTI message we refuse. The message is shown to the user in plain words, in the
    language active when it is shown (the launch's, or the browser's): give it lazily
    (gettext_lazy) with its ``params`` apart, so it is translated then, not when raised."""

    def __init__(self, message: str | Promise, status: int = 400, **params: object) -> None:
        super().__init__(message)
        self._message = message
        self.params = params
        self.status = status

    @property
    def message(self) -> str:
        text = str(self._message)
        return text % self.params if self.params else text

    def __str__(self) -> str:
        return self.message
