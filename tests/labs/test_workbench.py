"""The lab workbench: the live estimate comes from the cost model that grades runs, so what
it says a policy will measure is what the real runner then measures; bad policies are
refused with a message and nothing typed is lost; the result page shows the policy as JSON,
the chart's configuration and table, and the timing only with its spread."""

from __future__ import annotations

import json

import pytest
from django.template.defaultfilters import floatformat
from django.test import Client
from django.urls import reverse
from django.utils import translation

from activities.demo import enrol_demo_member
from labs import services
from labs.errors import InvalidPolicy
from labs.models import LabRun, RunStatus
from labs.runner.spec import MODEL_OP_KINDS
from labs.selectors import instructions_html
from lti.access import SESSION_KEY
from lti.models import Role
from tests.labs_helpers import lab_placement, small_lab
from tests.quiz_helpers import launched_client

JSON = {"HTTP_ACCEPT": "application/json"}
OVERLAPPING = {
    "kind": "boundaries",
    "segments": [
        {"start": 0, "end": 5, "checkpoint": True},
        {"start": 4, "end": 8, "checkpoint": False},
    ],
}


@pytest.fixture(autouse=True)
def quick_runs(settings):
    settings.LAB_TIMING_REPEATS = 3
    settings.LAB_RETRY_BACKOFF_SECONDS = 0


def workbench(**lab_fields):
    """A learner's session in a course with a lab placed, its reference computed by the
    real runner (as a lab's first run computes it)."""
    learner = enrol_demo_member(Role.LEARNER)
    lab = small_lab(max_runs=0, **lab_fields)
    services.ensure_reference(lab)
    return launched_client(learner), lab_placement(learner.context, lab), learner


def estimate(client, placement, form: dict):
    return client.post(reverse("labs:estimate", args=[placement.pk]), form, **JSON)


def run(client, placement, form: dict) -> LabRun:
    response = client.post(reverse("labs:submit", args=[placement.pk]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    done = services.execute_run(LabRun.objects.latest("pk").pk)
    assert done.status == RunStatus.SUCCEEDED, done.error
    return done


NESTED = {
    "kind": "nested",
    "segments": [
        {
            "start": 0,
            "end": 6,
            "checkpoint": True,
            "segments": [
                {"start": 0, "end": 3, "checkpoint": True},
                {"start": 3, "end": 6, "checkpoint": False},
            ],
        },
        {"start": 6, "end": 8, "checkpoint": False},
    ],
}
CHAIN_FORMS = [
    {"kind": "none"},
    {"kind": "every_block"},
    {"kind": "sqrt"},
    {"kind": "segments", "size": "3"},
    {"kind": "layers", "recompute": ["0", "1", "2", "3", "5"], "cuts": ["2", "5"]},
    {"kind": "selective", "save": ["matmul"]},
    {"kind": "json", "policy_json": json.dumps(NESTED)},
]


@pytest.mark.torch
@pytest.mark.usefixtures("quiz")
def test_the_estimate_is_what_the_runner_then_measures_for_every_kind_of_policy():
    client, placement, _learner = workbench()
    over_budget = 0
    for form in CHAIN_FORMS:
        response = estimate(client, placement, form)
        assert response.status_code == 200, (form, response.content)
        figures = response.json()["estimate"]
        measured = run(client, placement, form).result
        assert (figures["peak_bytes"], figures["recompute_flops"]) == (
            measured["peak_activation_bytes"],
            measured["recompute_flops"],
        ), form
        assert response.json()["within_budget"] == measured["within_budget"], form
        over_budget += not measured["within_budget"]
    # The policies span both sides of the budget, so "fits" is not said of everything.
    assert 0 < over_budget < len(CHAIN_FORMS)


@pytest.mark.torch
@pytest.mark.usefixtures("quiz")
def test_the_estimate_of_a_selective_policy_in_a_transformer_is_what_the_runner_measures():
    client, placement, _learner = workbench(
        slug="tiny-transformer",
        model_kind="transformer",
        blocks=2,
        width=16,
        batch=2,
        sequence=8,
        heads=2,
        dropout=0.1,
        budget_bytes=10**7,
    )
    # The op kinds the workbench offers are the ones the reference found the model runs.
    reference = placement.lab_placement.lab.__class__.objects.get(
        pk=placement.lab_placement.lab.pk
    ).reference
    ran = max((p["policy"]["save"] for p in reference["selective"]), key=len)
    assert set(ran) == set(MODEL_OP_KINDS["transformer"])
    for form in (
        {"kind": "selective", "save": ["attention", "norm"]},
        {"kind": "selective", "save": []},
        {"kind": "segments", "size": "1"},
    ):
        figures = estimate(client, placement, form).json()["estimate"]
        measured = run(client, placement, form).result
        assert (figures["peak_bytes"], figures["recompute_flops"]) == (
            measured["peak_activation_bytes"],
            measured["recompute_flops"],
        ), form


@pytest.mark.torch
@pytest.mark.usefixtures("quiz")
def test_a_chain_offers_only_the_op_kinds_it_runs():
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    page = launched_client(learner).get(reverse("labs:placement", args=[placement.pk]))
    html = page.content.decode()
    assert 'name="save" value="matmul"' in html
    assert 'name="save" value="pointwise"' in html
    assert 'value="attention"' not in html
    assert 'value="norm"' not in html
    ran = small_lab(slug="other")  # the mapping agrees with what the meter counts
    services.ensure_reference(ran)
    measured = max((p["policy"]["save"] for p in ran.reference["selective"]), key=len)
    assert set(measured) == set(MODEL_OP_KINDS["chain"])


@pytest.mark.usefixtures("quiz")
def test_bad_json_and_bad_policies_get_a_message_and_keep_what_was_typed():
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    client = launched_client(learner)
    broken = '{"kind": "segments", "size": '
    response = estimate(client, placement, {"kind": "json", "policy_json": broken})
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["errors"][0]

    overlapping = json.dumps(OVERLAPPING)
    response = estimate(client, placement, {"kind": "json", "policy_json": overlapping})
    assert response.status_code == 400
    assert "overlaps the one before it" in response.json()["errors"][0]
    response = estimate(client, placement, {"kind": "segments", "size": "99"})
    assert response.status_code == 400
    assert response.json()["errors"]

    # Submitting the same text: a 400 page that says why and still holds every character.
    response = client.post(
        reverse("labs:submit", args=[placement.pk]), {"kind": "json", "policy_json": overlapping}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "overlaps the one before it" in html
    assert overlapping.replace('"', "&quot;") in html
    assert not LabRun.objects.exists()


@pytest.mark.usefixtures("quiz")
def test_a_russian_student_reads_why_a_policy_cannot_run_in_russian():
    """The runner says why in English (it imports no Django); the service says the same in the
    student's language, with what the student typed in its place."""
    learner = enrol_demo_member(Role.LEARNER, "ru")
    placement = lab_placement(learner.context, small_lab())
    client = launched_client(learner)
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = "ru"
    overlapping = {"kind": "json", "policy_json": json.dumps(OVERLAPPING)}
    response = estimate(client, placement, overlapping)
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "Эту политику нельзя запустить: сегмент 4–8 перекрывает предыдущий."
    ]
    too_big = {"kind": "json", "policy_json": '{"kind": "segments", "size": 99}'}
    response = client.post(reverse("labs:submit", args=[placement.pk]), too_big)
    assert response.status_code == 400
    assert "«size» должно быть от 1 до 8, а сейчас 99" in response.content.decode()
    with translation.override("ru"), pytest.raises(InvalidPolicy) as refused:
        services.submit_run(placement=placement, user=learner.user, policy={"kind": "warp"})
    assert refused.value.message == (
        "Эту политику нельзя запустить: неизвестный вид политики 'warp'; выберите один из: "
        "none, every_block, segments, sqrt, boundaries, nested, selective."
    )
    assert not LabRun.objects.exists()


@pytest.mark.torch
@pytest.mark.usefixtures("quiz")
def test_without_javascript_the_estimate_button_shows_the_page_with_the_estimate():
    client, placement, _learner = workbench()
    response = client.post(reverse("labs:estimate", args=[placement.pk]), {"kind": "sqrt"})
    assert response.status_code == 200
    html = response.content.decode()
    assert not LabRun.objects.exists()
    assert "Peak activation memory:" in html
    assert "Recomputed:" in html
    assert '"kind": "sqrt"' in html.replace("&quot;", '"')  # the policy as JSON, in the editor


@pytest.mark.usefixtures("quiz")
def test_before_the_reference_exists_the_estimate_says_so():
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    response = estimate(launched_client(learner), placement, {"kind": "sqrt"})
    assert response.status_code == 200
    assert response.json()["estimate"] is None
    assert "No estimate yet" in response.json()["html"]


def test_instructions_are_markdown_paragraphs_with_html_escaped():
    html = instructions_html(
        "A chain of **64 blocks**\nthat wraps.\n\nA second <script>alert(1)</script> "
        "paragraph with [a link](javascript:alert(1))."
    )
    assert html.count("<p>") == 2
    assert "<strong>64 blocks</strong>\nthat wraps." in html  # a line break is a space
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript' not in html


@pytest.mark.torch
@pytest.mark.usefixtures("quiz")
def test_the_result_page_shows_the_policy_as_json_the_chart_and_the_timing_spread():
    client, placement, _learner = workbench()
    done = run(client, placement, {"kind": "sqrt"})
    html = client.get(reverse("labs:run", args=[done.public_id])).content.decode()
    assert "{&#x27;kind&#x27;" not in html
    assert "{'kind'" not in html
    assert "&quot;kind&quot;: &quot;sqrt&quot;" in html or '"kind": "sqrt"' in html
    start = html.index('<script id="chart-run" type="application/json">') + len(
        '<script id="chart-run" type="application/json">'
    )
    config = json.loads(html[start : html.index("</script>", start)])
    labels = [dataset["label"] for dataset in config["data"]["datasets"]]
    assert labels[:3] == ["Your policy", "√N segments", "No checkpointing"]
    assert labels[3:] == ["Optimal frontier", "Budget"]
    assert config["options"]["scales"]["x"]["title"]["text"] == "Peak activation memory (MiB)"
    assert config["options"]["plugins"]["legend"]["display"] is True
    # The reference points are drawn above the frontier (a lower order is drawn later).
    order = {dataset["label"]: dataset["order"] for dataset in config["data"]["datasets"]}
    assert max(order["√N segments"], order["No checkpointing"]) < order["Optimal frontier"]
    timings = done.result["timings_ms"]
    assert len(timings) == 3
    assert "not comparable" in html
    low, high = min(timings), max(timings)
    # The page rounds as people do (half up on the written figure: 1.65 shows as 1.7), which a
    # float's own formatting does not (1.65 is stored as 1.6499…), so the expected text is
    # written with the page's own filter.
    assert f"{floatformat(low, 1)} – {floatformat(high, 1)}" in html


@pytest.mark.usefixtures("quiz")
def test_the_estimate_is_only_for_members_of_the_course():
    learner = enrol_demo_member(Role.LEARNER)
    placement = lab_placement(learner.context, small_lab())
    url = reverse("labs:estimate", args=[placement.pk])
    assert Client().post(url, {"kind": "sqrt"}, **JSON).status_code == 403  # no launch
    outsider = launched_client(enrol_demo_member(Role.LEARNER))
    session = outsider.session
    session[SESSION_KEY] = {}  # signed in, but launched into no course
    session.save()
    assert outsider.post(url, {"kind": "sqrt"}, **JSON).status_code in (403, 404)
    assert outsider.get(url).status_code == 405  # an estimate is asked for with the form
