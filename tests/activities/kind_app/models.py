from django.db import models


class Exercise(models.Model):
    """A one-question exercise: the third activity kind, placed and graded like the others."""

    slug = models.SlugField(unique=True)
    title = models.JSONField()
    answer = models.CharField(max_length=100)
    points = models.PositiveIntegerField(default=10)

    def __str__(self) -> str:
        return self.slug


class ExercisePlacement(models.Model):
    resource_link = models.OneToOneField(
        "lti.ResourceLink",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="exercise_placement",
    )
    exercise = models.ForeignKey(Exercise, on_delete=models.PROTECT, related_name="placements")

    def __str__(self) -> str:
        return f"{self.exercise} at {self.resource_link_id}"


class Submission(models.Model):
    placement = models.ForeignKey("lti.ResourceLink", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="+")
    number = models.PositiveIntegerField()
    answer = models.CharField(max_length=100)
    score = models.DecimalField(max_digits=9, decimal_places=3)
    exercise_points = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.user_id}: {self.answer}"
