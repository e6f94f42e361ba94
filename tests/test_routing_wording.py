"""Wording the front door reads by meaning (issue 42): numbers in words name a store, a bare comparison
of two stores is a data question, a casual request for a bot is a new agent, and an assistant
tenant's question about the user's day is the assistant's."""

from __future__ import annotations

import pytest

from master_agent.capabilities import load_tenant, registered_domain_packs
from master_agent.capabilities.terms import holds_from_now, names_the_data
from master_agent.routing.graph.follow_ups import asks_a_share
from master_agent.routing.intent import message_entities, strip_entities
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import front_door


async def _routed(resources: RuntimeResources, message: str) -> tuple[str, str | None]:
    """(target kind, name) the demo retail tenant's front door routes a thread's first ``message`` to."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide(message, [], {})
    return decision.target.kind, decision.target.name


@pytest.mark.parametrize(
    ("text", "stores"),
    [
        ("Boost accessory attach at store six", {"store_id": 6}),
        ("how did Store Twelve do last week", {"store_id": 12}),
        ("raise store 2 by a fifth", {"store_id": 2}),
    ],
)
def test_a_store_numbered_in_words_is_that_store(text: str, stores: dict[str, int]) -> None:
    entities = message_entities(text)
    assert {key: entities[key] for key in stores if key in entities} == stores
    assert "six" not in strip_entities(text) and "welve" not in strip_entities(text)


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("Move the weekly planning back by 90 minutes", "Move the weekly planning back by"),
        ("push the retro 2 hrs later", "push the retro later"),
        ("give me 15 min with Tom", "give me with Tom"),
        ("revenue up 3m over 2 years", "revenue up over"),
        ("10 mins is plenty", "is plenty"),
    ],
)
def test_an_amount_or_a_duration_is_stripped_with_its_whole_unit(text: str, stripped: str) -> None:
    assert strip_entities(text) == stripped


def test_numbers_in_words_that_number_no_store_stay_words() -> None:
    assert strip_entities("show the top three stores") == "show the top three stores"
    assert "store_id" not in message_entities("one store is lagging")


async def test_a_goal_naming_its_store_in_words_is_not_asked_which_store(resources: RuntimeResources) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide("Boost accessory attach at store six by 10% within 60 days", [], {})
    assert decision.entities["store_id"] == 6
    assert decision.target.kind == "agent" and decision.clarification is None, decision.reason


@pytest.mark.parametrize(
    "message",
    ["compare store 4 and store 9 attach rates for august", "store four vs store nine revenue last month?"],
)
async def test_a_bare_comparison_of_two_stores_is_a_data_question(
    resources: RuntimeResources, message: str
) -> None:
    assert await _routed(resources, message) == ("query", "data")


async def test_a_casual_request_for_a_bot_goes_to_the_builder(resources: RuntimeResources) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    message = "could u pls whip up a bot that pings me whenever a store's refunds spike"
    decision = await door.decide(message, [], {})
    assert decision.intent == "CREATE" and decision.target.kind == "builder", decision.reason


@pytest.mark.parametrize(
    "message",
    [
        "what's on my plate thursday afternoon?",
        "am I free for lunch with Maria tomorrow?",
        "could you slide my product review forward by three hours?",
    ],
)
async def test_the_assistant_tenant_s_day_questions_go_to_the_assistant(
    resources: RuntimeResources, message: str
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-assistant"))
    decision = await door.decide(message, [], {})
    assert (decision.target.kind, decision.target.name) == ("agent", "personal_assistant"), decision.reason


@pytest.mark.parametrize(
    ("message", "target"),
    [
        # The intent head reads these without their days and times (ambiguous); the assistant's verb
        # head is sure of the action and the message says when: the assistant takes them.
        ("move my 3pm on thursday to 4:30", ("agent", "personal_assistant")),
        ("what does wednesday look like", ("agent", "personal_assistant")),
        # Nothing said of when: the front door's own question stands.
        ("move it", ("clarification", None)),
        ("send it", ("clarification", None)),
    ],
)
async def test_the_assistant_pack_s_sure_reading_is_a_second_opinion_on_a_question(
    resources: RuntimeResources, message: str, target: tuple[str, str | None]
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-assistant"))
    decision = await door.decide(message, [], {})
    assert (decision.target.kind, decision.target.name) == target, decision.reason


@pytest.mark.parametrize(
    "message",
    [
        "Cut store 4's refund rate by a fifth by the end of Q1",
        "Hi, could you help us get store one's attach rate up by a third over the next two months? Thanks",
        "Can we get store 3's attach rate to 8 percent by the end of February?",
    ],
)
async def test_a_target_with_a_date_ahead_is_a_goal_not_a_data_question(
    resources: RuntimeResources, message: str
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide(message, [], {})
    assert (decision.target.kind, decision.target.name) == ("agent", "master_agent"), decision.reason


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("avg basket at store 2", "average basket at store"),
        ("no. of txns per hr", "number of transactions per hours"),
        ("acc rev last wk", "accessory revenue"),
    ],
)
def test_business_shorthand_is_read_written_out(text: str, written: str) -> None:
    assert strip_entities(text).startswith(written)


def test_what_only_looks_like_shorthand_is_kept_as_said() -> None:
    assert strip_entities("an HR agent for leave requests") == "an HR agent for leave requests"
    assert strip_entities("No. Store 5 instead").startswith("No.")


@pytest.mark.parametrize(
    "message", ["avg txn value at store 3 last month?", "store 7 acc rev for october pls"]
)
async def test_a_data_question_in_shorthand_is_a_data_question(
    resources: RuntimeResources, message: str
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide(message, [], {})
    assert (decision.target.kind, decision.target.name) == ("query", "data"), decision.reason


@pytest.mark.parametrize(
    ("text", "store"), [("attach at stroe 2 in August", 2), ("sotre 5 refunds", 5), ("storre #4 sales", 4)]
)
def test_a_slip_of_the_store_noun_before_a_number_is_that_store(text: str, store: int) -> None:
    assert message_entities(text)["store_id"] == store
    assert "store" in strip_entities(text).split()


@pytest.mark.parametrize("text", ["raise the lead score 80 to the top", "stone 2 flooring"])
def test_another_word_a_letter_away_from_store_is_no_store(text: str) -> None:
    assert "store_id" not in message_entities(text)


@pytest.mark.parametrize(
    "text",
    [
        "raise the attach rate across every branch by 3 points before January",
        "company-wide, refund rate has to get under 3% by end of Jan",
        "move the chain average attach from 14 to 17 percent by March",
        "work out why attach sagged across all ten shops and get us back up",
        "how did every one of our shops do on refunds last month",
        "each single one of the outlets needs a plan for attach",
    ],
)
def test_a_message_about_every_store_says_so(text: str) -> None:
    entities = message_entities(text)
    assert entities.get("stores") == "all" and "store_id" not in entities


@pytest.mark.parametrize(
    "text",
    [
        "why is store 3 the worst in the chain",
        "every time I ask it fails",
        "list all my agents",
        "each one of my agents should cap its tokens",
    ],
)
def test_a_message_about_one_store_or_none_is_not_about_every_store(text: str) -> None:
    assert "stores" not in message_entities(text)


@pytest.mark.parametrize(
    "message",
    [
        "Lift accessory attach across every store by 10% within 60 days",
        "Lift accessory attach in every one of our shops by 10% within 60 days",
    ],
)
async def test_a_chain_wide_goal_is_not_asked_which_store(resources: RuntimeResources, message: str) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide(message, [], {})
    assert decision.entities["stores"] == "all"
    assert (decision.target.kind, decision.target.name) == ("agent", "master_agent"), decision.reason
    one = await door.decide("Lift accessory attach by 10% within 60 days", [], {})
    assert one.clarification is not None and one.clarification.entity == "store_id"


@pytest.mark.parametrize(
    "message",
    [
        "how many Galaxy S24s are in stock at store 3",
        "what's the stock of iPhone 15 cases at store 2 right now?",
    ],
)
async def test_a_question_about_stock_the_data_lacks_is_refused(
    resources: RuntimeResources, message: str
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide(message, [], {})
    assert decision.target.kind == "out_of_scope", decision.reason


async def test_a_question_naming_a_figure_the_data_has_stays_a_data_question(
    resources: RuntimeResources,
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide("which store has the best attach rate", [], {})
    assert decision.target.kind == "query", decision.reason


@pytest.mark.parametrize(
    "message",
    [
        "how did that attach plan for store 6 from August turn out in the end?",
        "the refund goal we gave store 2 back in July, did it come good?",
    ],
)
async def test_a_question_on_how_a_plan_turned_out_is_an_outcome_question(
    resources: RuntimeResources, message: str
) -> None:
    """The period such a question names is when the plan was made; only the outcome checks know what it
    set out to do, so it is not sent to the figure over that period."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide(message, [], {})
    assert (decision.target.kind, decision.target.name) == ("query", "outcome"), decision.reason


async def test_a_figure_over_a_past_month_is_still_a_data_question(resources: RuntimeResources) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide("what was store 6's attach rate in August?", [], {})
    assert (decision.target.kind, decision.target.name) == ("query", "data"), decision.reason


@pytest.mark.parametrize(
    "message",
    [
        "what share of store 3's phone buyers also bought a case",
        "which percentage of the orders at store 6 had a charger in them?",
        "what fraction of store 1's laptop sales came with a bag",
    ],
)
async def test_a_question_for_a_part_of_a_group_is_a_data_question(
    resources: RuntimeResources, message: str
) -> None:
    assert await _routed(resources, message) == ("query", "data")


@pytest.mark.parametrize(
    "message",
    [
        "get the share of phone buyers who take a case at store 3 up to 40% by March",
        "what share of store 3's phone buyers bought a case, and why so few?",
    ],
)
def test_moving_a_share_or_asking_why_is_not_asking_for_it(message: str) -> None:
    assert not asks_a_share(message)


def test_a_count_of_some_of_a_group_is_not_a_share() -> None:
    assert not asks_a_share("how many of our branches have broken air con right now?")
    assert asks_a_share("how many out of every ten phone buyers at store 3 bought a case?")


@pytest.mark.parametrize(
    "message",
    [
        "what slice of store 2's turnover in May came from chargers?",
        "roughly what cut of store 9's takings last quarter was accessories?",
        "what split of store 4's sales in March were handsets",
    ],
)
def test_a_share_said_with_any_noun_wordnet_files_under_a_share_is_asked(message: str) -> None:
    # "cut" here is the share's noun, no verb that moves a figure.
    assert asks_a_share(message)


@pytest.mark.parametrize(
    "message",
    [
        "which day of the week sells the most at store 5?",
        "what kind of accessories did store 3 sell in May?",
        "what cut of refunds should we aim to cut by March",
    ],
)
def test_a_noun_that_is_no_part_of_a_whole_asks_no_share(message: str) -> None:
    assert not asks_a_share(message)


async def test_a_share_of_a_figure_read_unsure_is_a_data_question(resources: RuntimeResources) -> None:
    """Read unsure, a share of the takings is not asked "what would you like me to do?"."""
    assert await _routed(resources, "what cut of store 5's takings in April 2026 came from add-ons?") == (
        "query",
        "data",
    )


@pytest.mark.parametrize(
    "message",
    [
        "roughly how many calories are in a banana?",
        "how many moons does Jupiter have?",
    ],
)
async def test_a_count_of_nothing_the_data_is_about_is_refused(
    resources: RuntimeResources, message: str
) -> None:
    """The head reads any "how many ...?" as a question about the data; one that names nothing the data
    is about (no store, figure, money, share, nor a noun of its tables) is answered by no query of it."""
    assert await _routed(resources, message) == ("out_of_scope", None)


@pytest.mark.parametrize(
    "message",
    [
        "how many handsets did we shift?",
        "how many outlets sold a charger?",
    ],
)
async def test_a_count_of_what_the_data_holds_stays_a_data_question(
    resources: RuntimeResources, message: str
) -> None:
    """Said in other words ("outlet" shares a WordNet sense with "store"), no period needed."""
    assert await _routed(resources, message) == ("query", "data")


@pytest.mark.parametrize(
    ("message", "lasting"),
    [
        ("the summary agent should skip store 10 from today onwards", True),
        ("from now on leave out the part-timers", True),
        ("the digest has been empty since 9am", False),
        ("run it for stores 4 and 5 since the 1st", False),
    ],
)
def test_a_span_from_now_without_end_is_read_past_a_store_s_number(message: str, lasting: bool) -> None:
    """ "10 from today" is no clock time: the store's number is blanked before Duckling reads it."""
    assert holds_from_now(message) is lasting


def test_a_word_shares_a_data_noun_s_first_senses_only() -> None:
    """ "leg" and "branch" share a sense (a fork of a shape), not the branch a store is."""
    metrics = registered_domain_packs()["retail"].data_metrics
    assert not names_the_data("how many legs does an octopus have?", metrics)
    assert names_the_data("how many branches do we have?", metrics)
