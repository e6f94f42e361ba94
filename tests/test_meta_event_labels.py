"""A date named by its event in the request and labelled in other words by the input ("born" and "Date
of birth", "shipped" and "Dispatch date", "purchase" and "Bought"): WordNet's synonyms and derivations
of the event word, as labels only, read in Python (the EvalSpec's reading) and in the built system's
SQL, the request's own label first."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from master_agent.capabilities.tools.lexicon import event_relatives
from master_agent.meta.design import _dated, expected_value, field_rules
from master_agent.meta.requirements import extract_requirements
from master_agent.runtime import RuntimeResources
from tests.test_meta_formulas import _answer, _built

LEAGUE = (
    "Build an agent system that checks youth football registrations. Each registration gives the player's "
    "name, when they were born and the season start date. It returns a JSON object with league (junior or "
    'senior). league "junior" when the player was born less than 16 years before the season start date; '
    'otherwise "senior".'
)


@pytest.mark.parametrize(
    ("word", "relative"),
    [("born", "birth"), ("shipped", "dispatch"), ("purchase", "bought"), ("shipped", "sent")],
)
def test_wordnet_relates_an_event_word_to_the_words_of_its_label(word: str, relative: str) -> None:
    assert relative in event_relatives(word)


@pytest.mark.parametrize(
    ("label", "text", "day"),
    [
        ("born", "Name: Jo. Date of birth: 1990-05-02. Joined: 2020-01-01.", date(1990, 5, 2)),
        ("shipped", "Ordered: 2025-01-01. Dispatch date: 2025-01-03.", date(2025, 1, 3)),
        ("purchase date", "Bought: 2025-02-01. Claim: 2025-02-10.", date(2025, 2, 1)),
        # The request's own label first, wherever the other stands.
        ("shipped", "Dispatch date: 2025-01-03. Shipped: 2025-01-05.", date(2025, 1, 5)),
        # A related word inside a sentence is no label.
        ("born", "You have until 2025-01-01 to reply.", None),
        ("shipped", "We will send it once paid; order 2025-01-04.", None),
    ],
)
def test_a_date_is_read_after_a_label_naming_its_event_in_other_words(
    label: str, text: str, day: date | None
) -> None:
    assert _dated(label, text) == day


@pytest.mark.parametrize(
    ("text", "league"),
    [
        ("Name: Sam. Date of birth: 2010-03-01. Season start date: 2025-08-01.", "junior"),
        ("Name: Al. Date of birth: 2009-08-01. Season start date: 2025-08-01.", "senior"),
        ("Name: Bo. Birth date: 2009-08-02. Season start date: 2025-08-01.", "junior"),
    ],
)
def test_the_spec_reads_a_birth_date_for_born(text: str, league: str) -> None:
    _, requirements = extract_requirements(LEAGUE)
    assert expected_value(field_rules(requirements)["league"], text) == league


async def test_the_built_system_reads_a_birth_date_for_born_in_sql(resources: RuntimeResources) -> None:
    _, tenant, built, system = await _built(resources, LEAGUE, "youth_league")
    subject = next(k["name"] for k in built["SystemSpec"]["state_schema"] if k.get("external"))
    answers: dict[str, Any] = {}
    for text, league in [
        ("Name: Sam. Date of birth: 2010-03-01. Season start date: 2025-08-01.", "junior"),
        ("Name: Al. Date of birth: 2009-08-01. Season start date: 2025-08-01.", "senior"),
        ("Name: Bo. Born: 2009-08-02. Season start date: 2025-08-01.", "junior"),
    ]:
        answers[text] = (await _answer(system, tenant, subject, text))["league"]
        assert answers[text] == league, answers
