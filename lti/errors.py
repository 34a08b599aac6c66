class LaunchError(Exception):
    """An LTI message we refuse. The message is shown to the user in plain words."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
