"""Quiz content files: parsing, strict validation, hashing and the seed's text layout.

Plain Python, no database: the loader in ``services`` stores what this returns.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from activities.content import LANGUAGES, ContentError, read_yaml, slug_of, texts_by_language

CONTENT_DIR = Path(__file__).resolve().parent / "content"
SEED_QUIZ_FILE = CONTENT_DIR / "gradient-checkpointing.yaml"
# Question.key and Option.key hold this many characters.
KEY_MAX_LENGTH = 32


@dataclass(frozen=True)
class OptionContent:
    key: str
    text: dict[str, str]
    correct: bool


@dataclass(frozen=True)
class QuestionContent:
    key: str
    source_language: str
    text: dict[str, str]
    options: tuple[OptionContent, ...]
    explanation: dict[str, str]


@dataclass(frozen=True)
class QuizContent:
    slug: str
    source_language: str
    title: dict[str, str]
    intro: dict[str, str]
    questions: tuple[QuestionContent, ...]

    def content_hash(self) -> str:
        canonical = json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()


def _language(value: object, where: str) -> str:
    if value not in LANGUAGES:
        raise ContentError(f"{where}: must be one of {', '.join(LANGUAGES)}, got {value!r}")
    return str(value)


def _key(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ContentError(f"{where}: needs a non-empty key")
    if len(value) > KEY_MAX_LENGTH:
        raise ContentError(f"{where}: a key has at most {KEY_MAX_LENGTH} characters")
    return value


def parse_quiz(data: object) -> QuizContent:
    if not isinstance(data, dict):
        raise ContentError("the file must hold a mapping with slug, title, intro and questions")
    raw_questions = data.get("questions")
    if not isinstance(raw_questions, list) or not raw_questions:
        raise ContentError("questions: needs at least one question")
    questions = []
    for number, raw in enumerate(raw_questions, start=1):
        where = f"questions[{number}]"
        if not isinstance(raw, dict):
            raise ContentError(f"{where}: must be a mapping")
        raw_options = raw.get("options")
        if not isinstance(raw_options, list) or len(raw_options) < 2:
            raise ContentError(f"{where}.options: needs at least two options")
        options = []
        for option_number, raw_option in enumerate(raw_options, start=1):
            option_where = f"{where}.options[{option_number}]"
            if not isinstance(raw_option, dict):
                raise ContentError(f"{option_where}: must be a mapping")
            correct = raw_option.get("correct", False)
            if not isinstance(correct, bool):
                raise ContentError(f"{option_where}.correct: must be true or false")
            options.append(
                OptionContent(
                    key=_key(raw_option.get("key"), option_where),
                    text=texts_by_language(raw_option.get("text"), f"{option_where}.text"),
                    correct=correct,
                )
            )
        if sum(option.correct for option in options) != 1:
            raise ContentError(f"{where}: exactly one option must be marked correct")
        if len({option.key for option in options}) != len(options):
            raise ContentError(f"{where}: option keys must be unique")
        questions.append(
            QuestionContent(
                key=_key(raw.get("key"), where),
                source_language=_language(raw.get("source_language"), f"{where}.source_language"),
                text=texts_by_language(raw.get("text"), f"{where}.text"),
                options=tuple(options),
                explanation=texts_by_language(raw.get("explanation"), f"{where}.explanation"),
            )
        )
    if len({question.key for question in questions}) != len(questions):
        raise ContentError("questions: keys must be unique")
    return QuizContent(
        slug=slug_of(data.get("slug"), "slug"),
        source_language=_language(data.get("source_language"), "source_language"),
        title=texts_by_language(data.get("title"), "title"),
        intro=texts_by_language(data.get("intro"), "intro"),
        questions=tuple(questions),
    )


def read_quiz_file(path: Path) -> QuizContent:
    data = read_yaml(path)
    try:
        return parse_quiz(data)
    except ContentError as error:
        raise ContentError(f"{path}: {error}") from error


def render_seed_text(quiz: QuizContent) -> str:
    """The quiz in the seed file's layout, each item in the language the seed wrote it in."""
    lines = [quiz.title[quiz.source_language], "", quiz.intro[quiz.source_language], ""]
    for number, question in enumerate(quiz.questions, start=1):
        language = question.source_language
        lines.append(f"{number}. {question.text[language]}")
        lines.extend(f"   • {option.text[language]}" for option in question.options)
    return "\n".join(lines)
