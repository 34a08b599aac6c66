from django.db import models


class SharedVersion(models.Model):
    """The version of rows that processes keep between requests (ops.process_memo): moved
    when such rows change, read by every process at most once a second. In the database,
    beside the rows it versions, so that any process that can commit a change can move it
    (decision 84)."""

    name = models.CharField(max_length=64, primary_key=True)
    value = models.CharField(max_length=32)

    def __str__(self) -> str:
        return f"{self.name}: {self.value}"
