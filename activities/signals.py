"""What the course side announces. ``grade_changed`` is sent (sender: the Grade model,
``grade``: the row) inside the transaction that changed a grade's score; gradesync
receives it and queues the grade for the LMS, so the course side needs no import of the
app above it."""

from django.dispatch import Signal

grade_changed = Signal()
