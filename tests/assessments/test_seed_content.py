"""The seed quiz in the content file: verbatim wording, the right key, full translations."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from activities.content import ContentError
from assessments.content import (
    CONTENT_DIR,
    parse_quiz,
    read_quiz_file,
    render_seed_text,
)

REPO_SEED = CONTENT_DIR / "gradient-checkpointing-quiz.seed.txt"
SHARED_SEED = (
    Path(__file__).resolve().parents[3] / "shared" / "seed" / "gradient-checkpointing-quiz.txt"
)
CYRILLIC = re.compile(r"[А-Яа-яЁё]")

# The right answer of each question, as the seed words it.
EXPECTED_KEY = {
    "q1": "Дополнительные вычисления (перевычисления) для меньшего использования памяти",
    "q2": "Потому что они нужны обратному распространению ошибки для вычисления градиентов.",
    "q3": "Activation storage can scale on the order of sqrt(N) checkpoints",
    "q4": "Which operations are recomputed, checkpoint placement, graph structure, and hardware",
    "q5": "torch.utils.checkpoint",
    "q6": "Their forward computations are rerun to regenerate needed activations",
    "q7": "FSDP for sharded model state and mixed precision for lower-precision tensors",
    "q8": "Which operations to save and which to recompute based on their memory and runtime costs",
}


def test_content_file_reproduces_the_seed_line_by_line(seed_content):
    expected = REPO_SEED.read_text(encoding="utf-8").split("\n")
    rendered = render_seed_text(seed_content).split("\n")
    for number, (want, got) in enumerate(zip(expected, rendered, strict=False), start=1):
        assert got == want, f"seed line {number} differs"
    assert len(rendered) == len(expected)


# The seed as it was handed to us; the repository keeps a byte-exact copy.
SEED_SHA256 = "8364dffb770cecdd27bde9187006aa2fe7875d3116edfe32815176b85d0012d4"


def test_repository_copy_of_the_seed_is_the_seed_as_given():
    assert hashlib.sha256(REPO_SEED.read_bytes()).hexdigest() == SEED_SHA256
    if SHARED_SEED.exists():  # beside the checkout in CI and in development
        assert SHARED_SEED.read_bytes() == REPO_SEED.read_bytes()


def test_answer_key_is_right_for_all_eight_questions(seed_content):
    assert [question.key for question in seed_content.questions] == list(EXPECTED_KEY)
    for question in seed_content.questions:
        correct = [o.text[question.source_language] for o in question.options if o.correct]
        assert correct == [EXPECTED_KEY[question.key]], question.key


def test_every_item_is_in_both_languages_and_each_language_is_its_own(seed_content):
    for question in seed_content.questions:
        texts = [question.text, question.explanation, *[o.text for o in question.options]]
        for text in texts:
            assert set(text) == {"en", "ru"}
            if not text["en"].startswith("torch."):
                assert CYRILLIC.search(text["ru"]), text["ru"]
            assert not CYRILLIC.search(text["en"]), text["en"]
        # Explanations say why: more than a sentence, in each language.
        for language in ("en", "ru"):
            assert len(question.explanation[language]) > 300, (question.key, language)


@pytest.mark.parametrize(
    ("key", "facts"),
    [
        ("q1", ["Chen et al. (2016)"]),
        ("q3", ["Chen et al. (2016", "sqrt(N)", "2·sqrt(N)"]),
        ("q5", ["use_reentrant=False", "preserve_rng_state"]),
        ("q6", ["RNG"]),
        ("q7", ["FSDP", "ZeRO", "bf16"]),
        ("q8", ["create_selective_checkpoint_contexts", "Korthikanti"]),
    ],
)
def test_explanations_cite_what_a_specialist_would(seed_content, key, facts):
    question = next(q for q in seed_content.questions if q.key == key)
    for fact in facts:
        assert fact in question.explanation["en"], (key, fact)


def _minimal_quiz() -> dict:
    def texts() -> dict:
        return {"en": "x", "ru": "х"}

    return {
        "slug": "s",
        "source_language": "en",
        "title": texts(),
        "intro": texts(),
        "questions": [
            {
                "key": "q1",
                "source_language": "en",
                "text": texts(),
                "explanation": texts(),
                "options": [
                    {"key": "a", "text": texts(), "correct": True},
                    {"key": "b", "text": texts()},
                ],
            }
        ],
    }


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda q: q["questions"][0]["options"][1].update(correct=True), "exactly one option"),
        (lambda q: q["questions"][0]["options"][0].update(correct=False), "exactly one option"),
        (lambda q: q["questions"][0]["text"].pop("ru"), "questions[1].text"),
        (lambda q: q["questions"][0].update(source_language="de"), "source_language"),
        (lambda q: q["questions"][0]["options"].pop(), "at least two options"),
        (lambda q: q.update(questions=[]), "at least one question"),
    ],
)
def test_invalid_content_is_refused_with_where_and_why(mutate, message):
    data = _minimal_quiz()
    parse_quiz(data)
    mutate(data)
    with pytest.raises(ContentError, match=re.escape(message)):
        parse_quiz(data)


def test_unreadable_file_is_a_content_error(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("questions: [unclosed", encoding="utf-8")
    with pytest.raises(ContentError, match="cannot be read as YAML"):
        read_quiz_file(path)
