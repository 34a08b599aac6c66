"""Names for the demo course's students: believable, distinct, English and Russian.

Russian surnames agree with the first name's gender (Иванов, Иванова)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

EN_FIRST = (
    "Alex", "Amelia", "Ben", "Chloe", "Daniel", "Ella", "Ethan", "Grace", "Hannah", "Isaac",
    "Jack", "Julia", "Leo", "Lily", "Lucas", "Maya", "Noah", "Olivia", "Owen", "Priya",
    "Ravi", "Ruby", "Samuel", "Sofia", "Theo", "Wei", "Yusuf", "Zoe", "Omar", "Mei",
)  # fmt: skip
EN_LAST = (
    "Adams", "Baker", "Brown", "Carter", "Chen", "Clarke", "Davies", "Evans", "Fischer",
    "García", "Green", "Hughes", "Jones", "Kaur", "Kim", "Lewis", "Martin", "Morris", "Nguyen",
    "Novak", "Okafor", "Patel", "Roberts", "Sato", "Schmidt", "Smith", "Taylor", "Walker",
    "Wilson", "Wright",
)  # fmt: skip
RU_FIRST_MALE = (
    "Александр", "Алексей", "Андрей", "Артём", "Борис", "Вадим", "Глеб", "Дмитрий", "Егор",
    "Иван", "Илья", "Кирилл", "Максим", "Никита", "Павел",
)  # fmt: skip
RU_FIRST_FEMALE = (
    "Алина", "Анастасия", "Анна", "Валерия", "Дарья", "Екатерина", "Елена", "Ирина",
    "Ксения", "Мария", "Наталья", "Ольга", "Полина", "Софья", "Юлия",
)  # fmt: skip
# Masculine forms; the feminine adds "а" (Смирнов → Смирнова).
RU_LAST = (
    "Алексеев", "Белов", "Васильев", "Воронин", "Голубев", "Егоров", "Зайцев", "Иванов",
    "Ковалёв", "Козлов", "Кузнецов", "Лебедев", "Морозов", "Новиков", "Орлов", "Павлов",
    "Попов", "Семёнов", "Смирнов", "Соколов", "Степанов", "Тихонов", "Фёдоров", "Фомин",
    "Чернов", "Шарапов", "Яковлев", "Волков", "Крылов", "Медведев",
)  # fmt: skip


def _all_names(language: str) -> list[tuple[str, str]]:
    if language == "ru":
        return [(first, last) for first in RU_FIRST_MALE for last in RU_LAST] + [
            (first, last + "а") for first in RU_FIRST_FEMALE for last in RU_LAST
        ]
    return [(first, last) for first in EN_FIRST for last in EN_LAST]


def distinct_names(rng: random.Random, language: str) -> Iterator[tuple[str, str]]:
    """(first, last) names in the language, never the same twice: every pair once in a
    random order (900 per language), then the pairs again with a second initial."""
    names = _all_names(language)
    rng.shuffle(names)
    yield from names
    for initial in "ABCDEFGHIKLMNOPRSTVW" if language != "ru" else "АБВГДЕЗИКЛМНОПРСТФ":
        for first, last in names:
            yield f"{first} {initial}.", last
    for number in itertools.count(2):  # past 18,000 students of one language
        for first, last in names:
            yield first, f"{last} {number}"


def one_name(language: str) -> tuple[str, str]:
    """A name for one demo visitor."""
    return random.SystemRandom().choice(_all_names(language))
