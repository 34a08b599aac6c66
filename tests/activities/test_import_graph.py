"""The import graph of the project's apps, drawn from the source (every import statement,
at module level and inside functions, since an import inside a function is still an
arrow): no cycles between apps, and every arrow points down the layers that
docs/decisions.md states.

Layers, bottom up (an app imports only apps on lower floors):
  0  ops          processes, metrics, throttling: imports no project app
  1  lti          the LTI 1.3 protocol only
  2  activities   the course side: placements, grades, the activity registry
  3  gradesync    grades to the LMS (AGS)
  4  assessments, labs   the activity kinds (neither imports the other), and gradebook, the
                      instructor's grades pages of every kind (which it reaches through
                      the registry only)
  5  analytics    dashboards over the kinds
  6  api          the REST API over everything
  7  config       settings, URLs and the site shell, which assemble the apps
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {
    "ops": 0,
    "lti": 1,
    "activities": 2,
    "gradesync": 3,
    "assessments": 4,
    "labs": 4,
    "gradebook": 4,
    "analytics": 5,
    "api": 6,
    "config": 7,
}


def imported_modules(source: str) -> list[str]:
    """Every absolute module an import statement anywhere in the source names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return found


def app_imports() -> dict[str, dict[str, set[str]]]:
    """app -> imported app -> the files that import it (migrations are history, not code)."""
    graph: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for app in LAYERS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for module in imported_modules(path.read_text()):
                target = module.split(".")[0]
                if target in LAYERS and target != app:
                    graph[app][target].add(str(path.relative_to(ROOT)))
    return graph


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    found = []

    def walk(node: str, path: list[str]) -> None:
        for target in graph.get(node, {}):
            if target == path[0]:
                found.append([*path, target])
            elif target not in path and target > path[0]:  # each cycle once, from its least app
                walk(target, [*path, target])

    for start in sorted(graph):
        walk(start, [start])
    return found


def test_the_graph_reader_sees_imports_inside_functions():
    source = "import os\nfrom lti.models import X\ndef f():\n    from labs import tasks\n"
    assert imported_modules(source) == ["os", "lti.models", "labs"]


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b": set()}, "b": {"c": set()}, "c": {"a": set()}}) == [
        ["a", "b", "c", "a"]
    ]


def test_every_app_of_the_project_has_a_floor():
    apps = {path.parent.name for path in ROOT.glob("*/apps.py")} | {"config"}
    assert apps <= set(LAYERS), apps - set(LAYERS)


def test_lti_is_the_ground_floor_of_the_course():
    """lti/ speaks the protocol: it imports no activity, no course side, no grade sync."""
    graph = app_imports()
    assert set(graph["lti"]) <= {"ops"}, dict(graph["lti"])
    assert not graph["ops"], dict(graph["ops"])


def test_no_import_cycles_between_apps():
    assert cycles(app_imports()) == []


def test_every_import_points_down_the_layers():
    upward = {
        (app, target): sorted(files)
        for app, targets in app_imports().items()
        for target, files in targets.items()
        if LAYERS[target] >= LAYERS[app]
    }
    assert upward == {}
