"""The gradebook's reads: one page of a placement's students with their grades, however
many the class holds."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.core.paginator import Page, Paginator
from django.db.models import Count, F, FilteredRelation, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from activities import registry
from activities.models import Grade
from activities.selectors import Try, student_name_expression
from gradesync.models import GradeSync
from lti.models import Membership, ResourceLink, Role

# The grades page's orders: a key of the query string to the columns it sorts by.
GRADE_TABLE_SORTS: dict[str, tuple[str, ...]] = {
    "name": ("shown", "pk"),
    "-name": ("-shown", "-pk"),
    "grade": ("score_given", "shown", "pk"),
    "-grade": ("-score_given", "shown", "pk"),
    "attempts": ("tries", "shown", "pk"),
    "-attempts": ("-tries", "shown", "pk"),
    "sync": ("sync_state", "shown", "pk"),
    "-sync": ("-sync_state", "shown", "pk"),
    "updated": ("updated_at", "shown", "pk"),
    "-updated": ("-updated_at", "shown", "pk"),
}


GRADE_TABLE_PAGE_SIZE = 50


@dataclass(frozen=True)
class GradeTableRow:
    user_id: int
    name: str
    username: str
    score_given: Decimal | None
    score_maximum: Decimal | None
    grading_method: str | None
    counted: int | None
    counted_number: int | None
    is_overridden: bool
    override_reason: str
    override_reason_shared: bool
    updated_at: object
    tries: list[Try]
    sync: GradeSync | None


@dataclass(frozen=True)
class GradeTable:
    rows: list[GradeTableRow]
    page: Page
    search: str
    sort: str
    kind: str  # the activity registry's key of the placement's kind
    is_lab: bool


def grade_table(
    placement: ResourceLink,
    *,
    search: str = "",
    sort: str = "name",
    page: int | str = 1,
    per_page: int = GRADE_TABLE_PAGE_SIZE,
) -> GradeTable:
    """One page of the placement's students (every learner of the course's roster, and
    anyone with an attempt, a run or a grade there) with their grade, how it was reached,
    their attempts or runs and the grade's sync state. Searching, sorting and counting run in
    SQL, so a class of thousands costs a few queries."""
    kind = registry.kind_of(placement)
    work = kind.work(placement)
    graded = Grade.objects.filter(placement=placement)
    roster = Membership.objects.filter(
        context_id=placement.context_id, role=Role.LEARNER, is_active=True
    )
    newest_sync = GradeSync.objects.filter(placement=placement, user_id=OuterRef("pk")).order_by(
        "-created_at", "-pk"
    )
    tries = (
        work.filter(user_id=OuterRef("pk")).values("user_id").annotate(n=Count("pk")).values("n")
    )
    students = (
        get_user_model()
        .objects.filter(
            Q(pk__in=roster.values("user_id"))
            | Q(pk__in=work.values("user_id"))
            | Q(pk__in=graded.values("user_id"))
        )
        .annotate(
            grade=FilteredRelation(
                "activity_grades", condition=Q(activity_grades__placement=placement)
            )
        )
        .annotate(
            shown=student_name_expression(),
            score_given=F("grade__score_given"),
            score_maximum=F("grade__score_maximum"),
            grading_method=F("grade__grading_method"),
            counted=F("grade__attempt_count"),
            counted_number=F("grade__counted_number"),
            is_overridden=F("grade__is_overridden"),
            override_reason=F("grade__override_reason"),
            override_reason_shared=F("grade__override_reason_shared"),
            updated_at=F("grade__updated_at"),
            tries=Coalesce(Subquery(tries), 0),
            sync_id=Subquery(newest_sync.values("pk")[:1]),
            sync_state=Subquery(newest_sync.values("state")[:1]),
        )
    )
    search = search.strip()[:100]
    if search:
        students = students.filter(
            Q(shown__icontains=search)
            | Q(username__icontains=search)
            | Q(lti_user__email__icontains=search)
        )
    sort = sort if sort in GRADE_TABLE_SORTS else "name"
    ordering = [
        F(column[1:]).desc(nulls_last=True)
        if column.startswith("-")
        else F(column).asc(nulls_last=True)
        for column in GRADE_TABLE_SORTS[sort]
    ]
    fields = (
        "pk", "shown", "username", "score_given", "score_maximum", "grading_method", "counted",
        "counted_number", "is_overridden", "override_reason", "override_reason_shared",
        "updated_at", "sync_id",
    )  # fmt: skip
    shown_page = Paginator(students.order_by(*ordering).values(*fields), per_page).get_page(page)
    found = list(shown_page.object_list)
    ids = [row["pk"] for row in found]
    by_student = kind.tries(placement, ids)
    syncs = GradeSync.objects.in_bulk([row["sync_id"] for row in found if row["sync_id"]])
    rows = [
        GradeTableRow(
            user_id=row["pk"],
            name=row["shown"],
            username=row["username"],
            score_given=row["score_given"],
            score_maximum=row["score_maximum"],
            grading_method=row["grading_method"],
            counted=row["counted"],
            counted_number=row["counted_number"],
            is_overridden=bool(row["is_overridden"]),
            override_reason=row["override_reason"] or "",
            override_reason_shared=bool(row["override_reason_shared"]),
            updated_at=row["updated_at"],
            tries=by_student.get(row["pk"], []),
            sync=syncs.get(row["sync_id"]),
        )
        for row in found
    ]
    is_lab = kind.key == "lab"
    return GradeTable(
        rows=rows, page=shown_page, search=search, sort=sort, kind=kind.key, is_lab=is_lab
    )
