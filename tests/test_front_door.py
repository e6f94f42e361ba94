"""The chat front door through the real service: every message routed to the right handler, over
``/chat/stream`` and through the official langgraph-sdk."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from master_agent.capabilities import bump_capability_version
from master_agent.domains.retail import RETAIL
from master_agent.routing.graph import inherits_target
from master_agent.routing.models import RouteTarget
from master_agent.routing.queries import carried_over
from master_agent.runtime import RuntimeResources
from tests.live_server import LiveServer, chat, data_schema, live_server_fixture, sdk, two_tenant_keys

TURNOVER = "Reduce employee turnover at Store 4 by 10% this year"
DATA_QUESTION = "What was Store 3's attach rate last month?"
GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


#: The service's clock: "last month" is then September 2026, inside the demo's sales history (which
#: ends on 2026-09-30). A question's window counts from the runtime clock, never from the data's end.
NOW = datetime(2026, 10, 14, 12, tzinfo=UTC)
live = live_server_fixture("door", graphs=("greeter=tests.context_graph:make_graph",), now=NOW)
keys = two_tenant_keys


def _client(live: LiveServer, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=live.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


async def test_the_three_messages_of_the_issue_get_honest_answers(
    live: LiveServer, keys: dict[str, str]
) -> None:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with _client(live, keys["demo-retail"]) as client:
        turnover = await chat(client, TURNOVER)
        routing = turnover["values"]["routing"]
        assert routing["intent"] == "EXECUTE"
        assert routing["target"]["kind"] in ("out_of_scope", "clarification")
        assert (
            turnover["routed"] and turnover["routed"][-1]["target"] == routing["target"]
        )  # streamed when made
        if routing["target"]["kind"] == "out_of_scope":
            assert turnover["values"]["reply"]["status"] == "out_of_scope"
            assert turnover["values"]["envelope"]["status"] != "success"
            assert "master_agent" in turnover["values"]["reply"]["text"]  # says what the tenant can do
        assert "solution" not in turnover["values"]  # no attach-rate intervention for a turnover goal

        data = await chat(client, DATA_QUESTION)
        values = data["values"]
        assert values["routing"]["target"] == {"kind": "query", "name": "data"}
        answer = values["reply"]["data"]
        assert answer["metric"] == "attach rate" and answer["params"]["store_id"] == "3"
        assert answer["window"]["label"] == "last month"
        assert answer["window"]["start"].startswith("2026-09-01")
        start, end = (datetime.fromisoformat(answer["window"][key]) for key in ("start", "end"))
        assert (start.day, end.day) == (1, 1) and end.month != start.month  # one whole calendar month
        async with resources.database.pool.connection() as conn:
            schema = await data_schema(live)
            row = await (
                await conn.execute(
                    f"SELECT avg(accessory_attached::int)::float AS rate, count(*) AS n FROM {schema}.transactions "
                    "WHERE store_id = 3 AND sold_at >= %s AND sold_at < %s",
                    (start, end),
                )
            ).fetchone()
        assert row["n"] > 0 and answer["observations"] == row["n"]
        assert answer["value"] == pytest.approx(row["rate"])
        assert f"{row['rate']:.1%}" in values["reply"]["text"]
        assert "SELECT" in values["reply"]["text"] and answer["sql"] in values["reply"]["text"]

        for message in (
            "Plan a Black Friday marketing campaign",
            "Schedule board meeting next month with the CFO",
        ):
            answered = await chat(client, message)
            assert answered["values"]["routing"]["target"]["kind"] in ("out_of_scope", "clarification"), (
                message
            )
            if answered["values"]["routing"]["target"]["kind"] == "out_of_scope":
                assert "None of your agents" in answered["values"]["reply"]["text"]
                assert answered["values"]["envelope"]["status"] != "success"

        listed = await chat(client, "list my agents")
        assert listed["values"]["routing"]["target"] == {"kind": "query", "name": "list_agents"}
        names = {agent["name"] for agent in listed["values"]["reply"]["data"]["agents"]}
        assert {"master_agent", "research"} <= names
        assert "Solves a retail business goal" in listed["values"]["reply"]["text"]


async def test_a_goal_is_routed_to_the_agent_and_a_follow_up_reads_the_conversation(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        solved = await chat(client, GOAL)
        values = solved["values"]
        assert values["routing"]["target"] == {"kind": "agent", "name": "master_agent"}
        assert values["routing"]["confidence"] >= 0.85 and values["routing"]["candidates"][0]["score"] >= 0.85
        assert set(values["routing"]["candidates"][0]["parts"]) >= {
            "relevance",
            "similarity",
            "performance",
            "recency",
        }
        assert values["envelope"]["status"] == "success"
        assert values["solution"]["root_cause"]["driver"] == "tenure_months"
        assert any(event.startswith("messages") for event, _ in solved["events"])  # model tokens streamed
        thread = solved["thread_id"]

        question = await chat(client, DATA_QUESTION, thread)
        follow_up = await chat(client, "and for Store 7?", thread)
        routing = follow_up["values"]["routing"]
        assert routing["follow_up"] is True
        assert routing["goal"] == "What was Store 7's attach rate last month?"
        assert routing["target"] == {"kind": "query", "name": "data"}
        assert follow_up["values"]["reply"]["data"]["params"]["store_id"] == "7"
        trace = follow_up["values"]["routing_trace"]
        assert [entry["message"] for entry in trace] == [GOAL, DATA_QUESTION, "and for Store 7?"]
        assert question["values"]["reply"]["data"]["params"]["store_id"] == "3"


async def test_agent_override_and_a_clarification_answered_over_chat(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        direct = await chat(client, "@master_agent Increase Store 5's attach rate by 10% in 90 days")
        assert direct["values"]["routing"]["target"] == {"kind": "agent", "name": "master_agent"}
        assert direct["values"]["routing"]["reason"].startswith("@master_agent")
        assert direct["values"]["goal"] == "Increase Store 5's attach rate by 10% in 90 days"

        unknown = await chat(client, "@master_agnet Increase Store 5's attach rate by 10% in 90 days")
        routing = unknown["values"]["routing"]
        assert routing["target"]["kind"] == "clarification"
        assert routing["clarification"]["kind"] == "multiple_choice"
        assert routing["clarification"]["options"][0] == "master_agent"
        assert unknown["state"]["next"] == ["clarify"]
        assert unknown["state"]["interrupts"][0]["value"]["question"].startswith("There is no agent named")
        answered = await chat(client, "1", unknown["thread_id"])
        assert answered["values"]["routing"]["target"] == {"kind": "agent", "name": "master_agent"}
        assert answered["values"]["routing"]["round"] == 1
        assert answered["values"]["envelope"]["status"] == "success"
        humans = [m["content"] for m in answered["values"]["messages"] if m["type"] == "human"]
        assert humans == ["@master_agnet Increase Store 5's attach rate by 10% in 90 days", "1"]


async def test_a_pack_agent_named_with_at_gets_the_message_when_a_message_can_fill_its_arguments(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        # research is a part of master_agent (not offered by discovery) but its arguments are a task and a
        # store: the message and its entities fill them.
        asked = await chat(client, "@research why is the accessory attach rate low?")
        routing = asked["values"]["routing"]
        assert routing["target"]["kind"] == "clarification"
        assert routing["clarification"]["entity"] == "store_id"
        # Store 5: a driver whose test is significant (at Stores 2 and 3 it is weak evidence: partial).
        answered = await chat(client, "Store 5", asked["thread_id"])
        values = answered["values"]
        assert values["routing"]["target"] == {"kind": "agent", "name": "research"}
        assert values["reply"]["agent"] == "research"
        assert values["envelope"]["status"] == "success"
        assert values["solution"]["root_cause"]["driver"]  # research's own output, not a strategy
        assert "strategy" not in values["solution"]
        steps = {step["tool"] for step in values["steps"]}
        assert "data_analysis" in steps and "research" not in steps  # it ran as the root, calling its part

        # strategy_generator needs a root cause from research: a chat message cannot carry one.
        part = await chat(client, "@strategy_generator raise Store 3's attach rate")
        routing = part["values"]["routing"]
        assert routing["target"]["kind"] == "clarification"
        assert "works inside another agent" in routing["clarification"]["question"]
        assert routing["clarification"]["options"] == ["master_agent"]
        assert "solution" not in part["values"]


async def test_a_fourth_clarification_round_is_never_asked(live: LiveServer, keys: dict[str, str]) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        turn = await chat(client, "help")
        assert turn["values"]["routing"]["target"]["kind"] == "clarification"
        rounds = 0
        while turn["values"]["routing"]["target"]["kind"] == "clarification":
            rounds += 1
            assert rounds <= 3
            turn = await chat(client, "hmm", turn["thread_id"])
        routing = turn["values"]["routing"]
        assert rounds == 3 and routing["round"] == 3
        assert routing["best_guess"] is True and "best guess" in routing["reason"]
        assert turn["state"]["next"] == []


async def test_a_data_question_without_a_known_figure_says_what_can_be_asked(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        answered = await chat(client, "How many orders were placed yesterday?")
        values = answered["values"]
        assert values["routing"]["target"] == {"kind": "query", "name": "data"}
        assert values["reply"]["status"] == "partial"
        assert "attach rate" in values["reply"]["text"]


async def test_a_data_question_read_only_by_its_figure_is_a_guess_and_never_a_success(
    live: LiveServer, keys: dict[str, str]
) -> None:
    # Nothing serves "avg training hrs per person at store 7?" on its own; it names a figure the data
    # has, so it is answered, but as a guessed route: the right number, partial, with the guess shown.
    async with _client(live, keys["demo-retail"]) as client:
        answered = await chat(client, "avg training hrs per person at store 7?")
        values = answered["values"]
        assert values["routing"]["target"] == {"kind": "query", "name": "data"}, values["routing"]["reason"]
        assert values["routing"]["best_guess"] is True
        assert values["reply"]["data"]["outcome"] == "answer" and values["reply"]["data"]["value"] is not None
        assert values["reply"]["status"] == values["envelope"]["status"] == "partial"
        weak = [check for check in values["envelope"]["verification"] if check["verdict"] == "weak"]
        assert any("data question" in check["claim"] for check in weak), weak


async def test_sdk_chat_input_is_routed_and_a_goal_input_goes_straight_to_the_solver(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    await client.runs.wait(
        thread["thread_id"],
        "master_agent",
        input={"messages": [{"role": "user", "content": "list my agents"}]},
    )
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["routing"]["target"] == {"kind": "query", "name": "list_agents"}  # type: ignore[index,call-overload]
    goal_thread = await client.threads.create()
    await client.runs.wait(goal_thread["thread_id"], "master_agent", input={"goal": GOAL})
    solved = await client.threads.get_state(goal_thread["thread_id"])
    values: dict[str, Any] = solved["values"]  # type: ignore[assignment]
    assert "routing" not in values  # an explicit EXECUTE: no routing decision
    assert values["solution"]["root_cause"]["driver"] == "tenure_months"


async def test_discovery_is_per_tenant_and_sees_capability_changes(
    live: LiveServer, keys: dict[str, str]
) -> None:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with _client(live, keys["other-shop"]) as other:
        before = await chat(other, "list my agents")
        agents = {agent["name"] for agent in before["values"]["reply"]["data"]["agents"]}
        assert "master_agent" in agents
        await bump_capability_version(resources.database.pool, "other-shop", enabled_sub_agents=["research"])
        after = await chat(other, "list my agents")
        assert {agent["name"] for agent in after["values"]["reply"]["data"]["agents"]} == {
            "master_agent",
            "research",
        }
    async with _client(live, keys["demo-retail"]) as mine:
        listed = await chat(mine, "list my agents")
        assert "data_analysis" in {agent["name"] for agent in listed["values"]["reply"]["data"]["agents"]}
        # Another tenant's thread is not this tenant's to continue.
        refused = await mine.post("/chat/stream", json={"message": "hi", "thread_id": after["thread_id"]})
        assert refused.status_code == 404


async def test_a_message_cutting_an_agent_flow_short_carries_the_previous_task(
    resources: RuntimeResources,
) -> None:
    from langchain_core.messages import HumanMessage

    from master_agent.runtime import master_graph

    config: Any = {"configurable": {"tenant_id": "demo-retail", "thread_id": str(uuid.uuid4())}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    # The agent flow is stopped where a new message would interrupt it: handed to the agent, unanswered.
    await graph.ainvoke({"messages": [HumanMessage(GOAL)]}, config, interrupt_before=["solve"])
    state = await graph.ainvoke(
        {"messages": [HumanMessage("Increase Store 5's attach rate by 10% in 90 days")]}, config
    )
    assert state["routing"]["previous_task"] == GOAL
    assert state["context"]["previous_task"] == GOAL
    assert state["envelope"]["status"] == "success"
    following = await graph.ainvoke({"messages": [HumanMessage("list my agents")]}, config)
    assert following["routing"]["previous_task"] is None  # that flow finished


async def test_a_runs_context_reaches_a_graph_written_with_context_schema(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    french = await client.runs.wait(None, "greeter", input={"name": "Ana"}, context={"language": "fr"})
    assert french == {"name": "Ana", "greeting": "Bonjour, Ana"}
    english = await client.runs.wait(None, "greeter", input={"name": "Bo"}, context={"language": "en"})
    assert english["greeting"] == "Hello, Bo"  # type: ignore[index,call-overload]


async def test_a_domain_pack_adds_its_own_query_kind(live: LiveServer, keys: dict[str, str]) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        ranked = await chat(client, "Which of our stores attaches accessories most often?")
    values = ranked["values"]
    assert values["routing"]["target"] == {"kind": "query", "name": "store_ranking"}
    # The pack's kind ranks by the attach rate (no figure named) over the window asked: here all the data.
    data = values["reply"]["data"]
    rates = [store["value"] for store in data["ranking"]]
    assert rates == sorted(rates, reverse=True) and len(rates) >= 2
    assert data["metric"] == "attach rate" and data["value"] == rates[0]
    assert data["window"]["label"] == "all your data"


@pytest.mark.parametrize(
    ("message", "outcome", "window"),
    [
        ("What was the attach rate at Store 4 in June 2026?", "answer", ("2026-06-01", "2026-07-01")),
        ("Store 8's attach rate from 15 July to 15 August", "answer", ("2026-07-15", "2026-08-16")),
        ("How many transactions did store 7 do in Q3?", "answer", ("2026-07-01", "2026-10-01")),
        ("How many refunds did Store 7 have over June and July?", "answer", ("2026-06-01", "2026-08-01")),
        # A slip of the store's noun is still the store, not a question about every store.
        ("What was the attach rate at stroe 2 in August 2026?", "answer", ("2026-08-01", "2026-09-01")),
        # November before the clock's October: last year's, before the data starts.
        ("Attach rate at Store 2 in November?", "no_data", ("2025-11-01", "2025-12-01")),
        ("What's the warranty attach rate at Store 2 in August?", "out_of_scope", None),
        # Data the tenant lacks in words near one of its figures: no device revenue for a margin.
        ("What gross margin did Store 4 make on devices in July?", "out_of_scope", None),
        ("Attach rate for Store 9 in June?", "clarify", None),
        # Which months a fiscal quarter is depends on the business: asked, not guessed.
        ("How many sales did Store 4 make in fiscal Q1?", "clarify", None),
        # England's calendar: the late May bank holiday weekend, Saturday to Monday.
        (
            "How many sales did store 2 make over the spring bank holiday weekend?",
            "answer",
            ("2026-05-23", "2026-05-26"),
        ),
        # A store named by a town the data does not know is asked about, not answered for all stores.
        ("What was the attach rate at the York store in July?", "clarify", None),
        # Sales told apart by how they were paid: the data has no payment method.
        ("What share of store 3's sales in July were paid by card?", "out_of_scope", None),
    ],
)
async def test_a_data_question_answers_the_window_it_names_or_says_why_not(
    live: LiveServer, keys: dict[str, str], message: str, outcome: str, window: tuple[str, str] | None
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, message))["values"]
    assert values["reply"]["kind"] == "query", (values["routing"], values["reply"])
    answer = values["reply"]["data"]
    assert answer["outcome"] == outcome, values["reply"]["text"]
    assert (values["reply"]["status"] == "success") is (outcome == "answer"), values["reply"]["text"]
    if window is not None:
        assert (answer["window"]["start"][:10], answer["window"]["end"][:10]) == window
    if outcome == "answer":
        start, end = (datetime.fromisoformat(answer["window"][key]) for key in ("start", "end"))
        store = int(answer["params"]["store_id"])
        async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
            schema = await data_schema(live)
            row = await (
                await conn.execute(
                    f"SELECT count(*) AS n FROM {schema}.transactions WHERE store_id = %s AND sold_at >= %s"
                    " AND sold_at < %s",
                    (store, start, end),
                )
            ).fetchone()
        assert answer["observations"] == row["n"] > 0
    if outcome == "no_data":
        assert "2026-09-30" in values["reply"]["text"]  # says where the data ends


@pytest.mark.parametrize(
    ("message", "status", "guess", "day"),
    [
        # Many countries keep a "National Day", each on its own day, and the message names no country:
        # Singapore's (one of the other calendars read) is a guess, said with the figure, then no claim.
        ("How many sales did store 2 make on National Day?", "partial", "Singapore", "2026-08-09"),
        # The country said settles it.
        ("How many sales did store 2 make on South Africa's Heritage Day?", "success", None, "2026-09-24"),
        # So does a name only one country's calendar keeps.
        ("How many sales did store 2 make on Heritage Day?", "success", None, "2026-09-24"),
    ],
)
async def test_a_data_question_over_a_guessed_holiday_says_the_guess_and_claims_nothing(
    live: LiveServer, keys: dict[str, str], message: str, status: str, guess: str | None, day: str
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, message))["values"]
    reply = values["reply"]
    assert reply["kind"] == "query", (values["routing"], reply)
    data = reply["data"]
    assert data["outcome"] == "answer" and data["observations"] > 0, reply["text"]
    assert data["window"]["start"][:10] == day, reply["text"]
    assert reply["status"] == status, reply["text"]
    weak = [check for check in data["verification"] if check["verdict"] == "weak"]
    if guess is None:
        assert not weak
    else:
        assert guess in reply["text"] and any(guess in check["evidence"] for check in weak)


async def test_a_question_about_the_past_keeps_its_window_and_invents_no_target(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, "Why was the attach rate at store 2 so low in August?"))["values"]
    reply, handoff = values["reply"], (values.get("envelope") or {}).get("handoff") or {}
    assert reply["status"] != "success", reply
    assert handoff.get("kind") == "past_question", (reply, handoff)
    facts = handoff["facts"]
    assert facts["window"]["start"].startswith("2026-08-01") and facts["window"]["end"].startswith(
        "2026-09-01"
    )
    assert facts["value"] is not None and facts["observations"] > 0  # measured over August, at Store 2
    assert "no target" in handoff["explanation"]


async def test_a_question_about_a_figure_the_data_lacks_is_refused(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """No figure's name: the data question's handler places it by meaning as data the tenant does not
    have, or the front door reads it as work none of its agents does (the labelled sets' convention);
    either way it is refused, never answered with another figure."""
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, "What was foot traffic at Store 5 in August?"))["values"]
    reply = values["reply"]
    assert reply["status"] != "success", reply
    refused_by = reply["kind"] if reply["kind"] == "out_of_scope" else reply["data"]["outcome"]
    assert refused_by == "out_of_scope", reply


async def test_a_figure_narrowed_to_rows_the_data_cannot_pick_is_refused_and_a_region_is_answered(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """ "The refund rate for headphones" and a goal on it: the sales have no product, so the figure over
    all of them would be presented as the headphones' own; refused naming what is missing, the goal
    given no plan. "For the north stores" narrows by a value the stores table holds: answered."""
    async with _client(live, keys["demo-retail"]) as client:
        question = await chat(client, "What was the refund rate for headphones at store 8 in September 2026?")
        goal = await chat(
            client, "Cut store 8's refunds among first-time customers by a third within 90 days"
        )
        region = await chat(client, "What was the attach rate for the north stores in August 2026?")
        # Some of the staff, by a kind of worker no column records: no made-up split of them.
        workers = await chat(
            client, "did the part-time staff at store 3 sell more phones than full-time staff in July 2026?"
        )
    worked = workers["values"]["reply"]
    assert worked["status"] != "success" and worked["data"]["outcome"] == "out_of_scope", worked
    reply = question["values"]["reply"]
    assert reply["status"] != "success", reply
    assert reply["data"]["outcome"] == "out_of_scope", reply
    assert reply["data"]["missing"] == ["headphones data"], reply
    goal_reply = goal["values"]["reply"]
    assert goal_reply["status"] != "success", goal_reply
    assert "first-time customers" in str(goal["values"].get("envelope")), goal["values"].get("envelope")
    data = region["values"]["reply"]["data"]
    assert data["outcome"] == "answer" and data["metric"] == "attach rate", region["values"]["reply"]


async def test_stock_asked_in_other_words_is_refused_naming_the_stock_and_a_trade_figure_is_answered(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """ "How many handsets are sitting in the back room" asks what is on hand, which rows of sales never
    say: refused with the stock named, never answered with all the sales. "AOV north vs west for
    August", which the intent head refuses, names a figure of the data over a month gone by: answered
    for each region."""
    async with _client(live, keys["demo-retail"]) as client:
        stock = await chat(client, "how many handsets are sitting in the back room at store 2 right now?")
        aov = await chat(client, "Quick one for the deck - AOV north vs west for August?")
    reply = stock["values"]["reply"]
    assert reply["status"] != "success", reply
    assert reply["data"]["outcome"] == "out_of_scope", reply
    assert reply["data"]["missing"] == ["stock levels (handsets on hand)"]
    data = aov["values"]["reply"]["data"]
    assert data["outcome"] == "answer" and data["metric"] == "average basket", aov["values"]["reply"]
    assert data["window"]["start"].startswith("2026-08-01") and data["window"]["end"].startswith("2026-09-01")


REGION_OF = "(SELECT store_id FROM {schema}.stores WHERE region = '{region}')"


@pytest.mark.parametrize(
    ("message", "truth"),
    [
        # Numbers in words and a store run together are the store; "six in July" is no 6 July.
        (
            "attach rate at store six in July 2026",
            "SELECT avg(accessory_attached::int)::float AS v FROM {schema}.transactions WHERE store_id = 6 "
            "AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01'",
        ),
        (
            "refnd rate store5 july 2026?",
            "SELECT avg(refunded::int)::float AS v FROM {schema}.transactions WHERE store_id = 5 "
            "AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01'",
        ),
        # A region is its stores, read from the data.
        (
            "What was the refund rate across our northern stores in August 2026?",
            "SELECT avg(refunded::int)::float AS v FROM {schema}.transactions WHERE store_id IN "
            + REGION_OF.replace("{region}", "north")
            + " AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'",
        ),
        # The staff list is a snapshot.
        (
            "How many staff at Store 5 have completed their training?",
            "SELECT count(*) AS v FROM {schema}.staff WHERE store_id = 5 AND training_completed",
        ),
        # Best is lowest for a refund rate; the value is the figure of the store that ranks first.
        (
            "Which store had the best refund rate in August 2026?",
            "SELECT min(r) AS v FROM (SELECT avg(refunded::int)::float AS r FROM {schema}.transactions "
            "WHERE sold_at >= '2026-08-01' AND sold_at < '2026-09-01' GROUP BY store_id) AS rates",
        ),
        # Worst on refunds is judged by their share of the sales (the highest refund rate), not their count.
        (
            "Which branch had the worst record on returns in August 2026?",
            "SELECT max(r) AS v FROM (SELECT avg(refunded::int)::float AS r FROM {schema}.transactions "
            "WHERE sold_at >= '2026-08-01' AND sold_at < '2026-09-01' GROUP BY store_id) AS rates",
        ),
        # A region's stores ranked: fewest is the lowest count.
        (
            "which of our western shops had the fewest refunds in august 2026?",
            "SELECT min(r) AS v FROM (SELECT count(*) FILTER (WHERE refunded) AS r FROM {schema}.transactions "
            "WHERE sold_at >= '2026-08-01' AND sold_at < '2026-09-01' AND store_id IN "
            + REGION_OF.replace("{region}", "west")
            + " GROUP BY store_id) AS counts",
        ),
        # The word that names an end decides the order, not "rank".
        (
            "Rank our stores by attch rate for August 2026 - who's at the bottom?",
            "SELECT min(r) AS v FROM (SELECT avg(accessory_attached::int)::float AS r FROM {schema}.transactions "
            "WHERE sold_at >= '2026-08-01' AND sold_at < '2026-09-01' GROUP BY store_id) AS rates",
        ),
        (
            "Total takings at Store 3 in July 2026, devices plus accessories",
            "SELECT sum(device_amount + coalesce(accessory_amount, 0))::float AS v FROM {schema}.transactions "
            "WHERE store_id = 3 AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01'",
        ),
        # Money said to come from a part of the sales is that part's money, not all the takings.
        (
            "how much did store 7 make from accessories in the first half of september 2026",
            "SELECT coalesce(sum(accessory_amount), 0)::float AS v FROM {schema}.transactions "
            "WHERE store_id = 7 AND sold_at >= '2026-09-01' AND sold_at < '2026-09-16'",
        ),
        (
            "What did store 4 take on phones in August 2026?",
            "SELECT coalesce(sum(device_amount), 0)::float AS v FROM {schema}.transactions "
            "WHERE store_id = 4 AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'",
        ),
        # Figures over the rows' units: different staff, a total per trading day, a median of each
        # seller's own rate; a total named by a compound noun; money given back is the refunded money.
        (
            "how many separate members of staff put a sale through at store 6 in August 2026?",
            "SELECT count(DISTINCT staff_id)::float AS v FROM {schema}.transactions "
            "WHERE store_id = 6 AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'",
        ),
        (
            "what were the average takings per trading day at store 2 in July 2026?",
            "SELECT sum(device_amount + coalesce(accessory_amount, 0))::float "
            "/ count(DISTINCT (sold_at AT TIME ZONE 'UTC')::date) AS v FROM {schema}.transactions "
            "WHERE store_id = 2 AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01'",
        ),
        (
            "what was the median of each seller's own refund rate at store 5 in August 2026?",
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY r) AS v FROM (SELECT staff_id, "
            "avg(refunded::int)::float AS r FROM {schema}.transactions WHERE store_id = 5 "
            "AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01' GROUP BY staff_id) AS each_seller",
        ),
        (
            "What were the grand total takings at store 1 in June 2026?",
            "SELECT sum(device_amount + coalesce(accessory_amount, 0))::float AS v FROM {schema}.transactions "
            "WHERE store_id = 1 AND sold_at >= '2026-06-01' AND sold_at < '2026-07-01'",
        ),
        (
            "how much money did store 4 give back to customers in July 2026?",
            "SELECT coalesce(sum(device_amount + coalesce(accessory_amount, 0)), 0)::float AS v "
            "FROM {schema}.transactions WHERE store_id = 4 AND sold_at >= '2026-07-01' "
            "AND sold_at < '2026-08-01' AND refunded",
        ),
        (
            "Store 6 in August 2026: weekend refund rate vs weekday refund rate?",
            "SELECT avg(refunded::int) FILTER (WHERE extract(isodow FROM sold_at AT TIME ZONE 'UTC') >= 6)::float "
            "- avg(refunded::int) FILTER (WHERE extract(isodow FROM sold_at AT TIME ZONE 'UTC') < 6)::float AS v "
            "FROM {schema}.transactions WHERE store_id = 6 AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'",
        ),
        # The rows a question keeps by the tenant's own columns: a staff flag (through the sales' staff),
        # a flag of the sale, an amount band, the days of every week.
        (
            "how many sales did the untrained staff at store five make in august 2026",
            "SELECT count(*)::float AS v FROM {schema}.transactions WHERE store_id = 5 AND sold_at >= '2026-08-01' "
            "AND sold_at < '2026-09-01' AND staff_id IN (SELECT staff_id FROM {schema}.staff WHERE NOT training_completed)",
        ),
        (
            "How many sales at store 1 went out the door with an accessory in Q3 2026?",
            "SELECT count(*)::float AS v FROM {schema}.transactions WHERE store_id = 1 AND sold_at >= '2026-07-01' "
            "AND sold_at < '2026-10-01' AND accessory_attached",
        ),
        (
            "refund rate at store 2 in July 2026 for phones over 1,000",
            "SELECT avg(refunded::int)::float AS v FROM {schema}.transactions WHERE store_id = 2 "
            "AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01' AND device_amount > 1000",
        ),
        (
            "average basket at store 4 on Saturdays in July 2026",
            "SELECT avg(device_amount + coalesce(accessory_amount, 0))::float AS v FROM {schema}.transactions "
            "WHERE store_id = 4 AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01' "
            "AND extract(isodow FROM sold_at AT TIME ZONE 'UTC') = 6",
        ),
        # The hours of every day, on the data's clock; "put through" is no range to next June.
        (
            "How many sales did store 1 make on Sunday afternoons in July 2026, after 3pm?",
            "SELECT count(*)::float AS v FROM {schema}.transactions WHERE store_id = 1 AND sold_at >= '2026-07-01' "
            "AND sold_at < '2026-08-01' AND extract(isodow FROM sold_at AT TIME ZONE 'UTC') = 7 "
            "AND extract(hour FROM sold_at AT TIME ZONE 'UTC') >= 15 AND extract(hour FROM sold_at AT TIME ZONE 'UTC') < 19",
        ),
        (
            "how many sales did Staff 20 put through in August 2026?",
            "SELECT count(*)::float AS v FROM {schema}.transactions WHERE staff_id = 20 "
            "AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'",
        ),
        # A count of accessories is of the sales with one; the value of refunded sales is their money.
        (
            "How many accessories did store 6 sell in June 2026?",
            "SELECT count(*)::float AS v FROM {schema}.transactions WHERE store_id = 6 AND sold_at >= '2026-06-01' "
            "AND sold_at < '2026-07-01' AND accessory_attached",
        ),
        (
            "what was the value of the refunded sales at store 3 in July 2026?",
            "SELECT sum(device_amount + coalesce(accessory_amount, 0))::float AS v FROM {schema}.transactions "
            "WHERE store_id = 3 AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01' AND refunded",
        ),
    ],
)
async def test_a_data_question_reads_who_and_when_as_users_say_them(
    live: LiveServer, keys: dict[str, str], message: str, truth: str
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, message))["values"]
    answer = values["reply"]["data"]
    assert answer["outcome"] == "answer" and values["reply"]["status"] == "success", values["reply"]["text"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        row = await (await conn.execute(truth.replace("{schema}", schema))).fetchone()
    assert answer["value"] == pytest.approx(row["v"])


async def test_money_from_a_part_no_figure_is_the_money_of_is_asked_about_not_answered_as_all_takings(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, "How much did store 1 make from warranties in July 2026?"))["values"]
    reply = values["reply"]
    assert reply["status"] != "success" and reply["data"]["outcome"] == "clarify"
    assert "total revenue" in reply["data"]["readings"] and "'warranties'" in reply["text"]


async def test_one_store_of_a_region_is_asked_about_and_year_to_date_is_partial(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        one = (await chat(client, "What was the attach rate at our east store in July 2026?"))["values"]
        ytd = (await chat(client, "Store 6 refund rate YTD"))["values"]
    assert one["reply"]["data"]["outcome"] == "clarify"
    assert one["reply"]["data"]["known"] == {"store": [2, 6]}  # the data's east stores
    # Year to date reaches before the data's first day: what is known, said as partial.
    assert ytd["reply"]["data"]["window"]["start"].startswith("2026-01-01")
    assert ytd["reply"]["status"] == "partial"
    assert re.search(
        r"Your data runs from 2026-\d\d-\d\d to .*, so only 2026-\d\d-\d\d to .* is counted",
        ytd["reply"]["text"],
    )


async def test_a_window_the_data_covers_in_part_is_a_partial_answer(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, "How many transactions did store 7 do in Q2?"))["values"]
    reply = values["reply"]
    assert reply["data"]["outcome"] == "answer" and reply["status"] == "partial"
    assert re.search(r"so only 2026-0[4-6]-\d\d to 2026-06-30 is counted", reply["text"]), reply["text"]
    assert values["envelope"]["confidence_band"] != "COMPLETE"


@pytest.mark.parametrize(
    "message",
    [
        "What was the attach rate at Store 1 and Store 8 in September 2026?",
        # A bare comparison, its stores in words, is a data question too (issue 42).
        "compare store one and store eight attach rates for september 2026",
    ],
)
async def test_a_comparison_of_two_stores_answers_each(
    live: LiveServer, keys: dict[str, str], message: str
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        values = (await chat(client, message))["values"]
    data = values["reply"]["data"]
    assert data["outcome"] == "answer" and set(data["each"]) == {"1", "8"}, values["reply"]["text"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        rows = await (
            await conn.execute(
                f"SELECT store_id, avg(accessory_attached::int)::float AS value FROM {schema}.transactions "
                "WHERE store_id IN (1, 8) AND sold_at >= '2026-09-01' AND sold_at < '2026-10-01' GROUP BY 1"
            )
        ).fetchall()
    measured = {str(row["store_id"]): row["value"] for row in rows}
    assert data["each"] == pytest.approx(measured)
    assert data["value"] == pytest.approx(measured["1"] - measured["8"])


async def test_which_store_ranks_first_and_a_period_pointed_at_is_asked_for(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        ranked = (await chat(client, "Which store had the lowest attach rate in August 2026?"))["values"]
        answer = ranked["reply"]["data"]
        assert answer["outcome"] == "answer" and answer["window"]["start"].startswith("2026-08-01")
        async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
            schema = await data_schema(live)
            row = await (
                await conn.execute(
                    f"SELECT store_id, avg(accessory_attached::int)::float AS rate FROM {schema}.transactions "
                    "WHERE sold_at >= '2026-08-01' AND sold_at < '2026-09-01' GROUP BY store_id ORDER BY rate LIMIT 1"
                )
            ).fetchone()
        # The answer's value is the figure; who ranks first is said beside it.
        assert answer["leader"] == {"store": row["store_id"]}
        assert answer["value"] == pytest.approx(row["rate"])
        pointed = (await chat(client, "And how many sales did Store 2 have that month?"))["values"]
        assert pointed["reply"]["data"]["outcome"] == "clarify"  # no month said before in this thread
        assert "that month" in pointed["reply"]["text"]


async def test_a_clarification_is_answered_by_the_next_input_over_the_langgraph_api(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    asked = "@master_agnet Increase Store 5's attach rate by 10% in 90 days"
    await client.runs.wait(
        thread["thread_id"], "master_agent", input={"messages": [{"role": "user", "content": asked}]}
    )
    waiting = await client.threads.get_state(thread["thread_id"])
    assert waiting["next"] == ["clarify"]
    # A new input, not ``command.resume``: it answers the question the thread waits on.
    await client.runs.wait(
        thread["thread_id"], "master_agent", input={"messages": [{"role": "user", "content": "1"}]}
    )
    answered = await client.threads.get_state(thread["thread_id"])
    values: dict[str, Any] = answered["values"]  # type: ignore[assignment]
    assert values["routing"]["target"] == {"kind": "agent", "name": "master_agent"}
    assert values["routing"]["round"] == 1 and values["routing"]["message"] == asked
    assert values["envelope"]["status"] == "success"

    # A message that changes direction is no answer: it is routed as a new message.
    await client.runs.wait(
        thread["thread_id"], "master_agent", input={"messages": [{"role": "user", "content": asked}]}
    )
    await client.runs.wait(
        thread["thread_id"],
        "master_agent",
        input={"messages": [{"role": "user", "content": "actually, list my agents"}]},
    )
    redirected = await client.threads.get_state(thread["thread_id"])
    routing = redirected["values"]["routing"]  # type: ignore[index,call-overload]
    assert routing["target"] == {"kind": "query", "name": "list_agents"} and routing["round"] == 0


async def test_a_data_follow_up_takes_the_period_figure_and_store_it_points_back_at(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        first = await chat(client, "What was the refund rate at Store 7 in August 2026?")
        thread = first["thread_id"]
        sales = (await chat(client, "And how many sales did it have that month?", thread))["values"]
        east = (await chat(client, "same for the east stores", thread))["values"]
        other = (await chat(client, "and for store 2?", thread))["values"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        august = "sold_at >= '2026-08-01' AND sold_at < '2026-09-01'"
        row = await (
            await conn.execute(
                f"SELECT count(*) AS n FROM {schema}.transactions WHERE store_id = 7 AND {august}"
            )
        ).fetchone()
        region = await (
            await conn.execute(
                f"SELECT count(*) AS n FROM {schema}.transactions WHERE {august} AND store_id IN "
                f"(SELECT store_id FROM {schema}.stores WHERE region = 'east')"
            )
        ).fetchone()
    data = sales["reply"]["data"]
    assert data.get("outcome") == "answer", (sales["routing"], sales["reply"]["text"])
    assert (data["metric"], data["value"]) == ("transactions", row["n"]), sales["reply"]["text"]
    assert data["window"]["start"].startswith("2026-08-01")
    data = east["reply"]["data"]
    assert data.get("outcome") == "answer", (east["routing"], east["reply"]["text"])
    assert (data["metric"], data["value"]) == ("transactions", region["n"]), east["reply"]["text"]
    data = other["reply"]["data"]
    assert data.get("outcome") == "answer", (other["routing"], other["reply"]["text"])
    assert (data["metric"], data["params"]["store_id"]) == ("transactions", "2"), other["reply"]["text"]
    assert data["window"]["start"].startswith("2026-08-01")


async def test_a_follow_up_that_names_nobody_keeps_whom_the_question_before_was_about(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        thread = (await chat(client, "What was the attach rate at Store 4 in June 2026?"))["thread_id"]
        july = (await chat(client, "and in July?", thread))["values"]
        chain = (await chat(client, "and across every store together?", thread))["values"]
        ranked = await chat(client, "Which store took the most accessory revenue in Q3?")
        least = (await chat(client, "and the least?", ranked["thread_id"]))["values"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        july_rows = "sold_at >= '2026-07-01' AND sold_at < '2026-08-01'"
        store4, everyone = [
            (
                await (
                    await conn.execute(
                        f"SELECT avg(accessory_attached::int)::float AS v FROM {schema}.transactions "
                        f"WHERE {july_rows}{scope}"
                    )
                ).fetchone()
            )["v"]
            for scope in (" AND store_id = 4", "")
        ]
        lowest = await (
            await conn.execute(
                f"SELECT store_id FROM {schema}.transactions WHERE sold_at >= '2026-07-01' AND "
                "sold_at < '2026-10-01' GROUP BY store_id ORDER BY coalesce(sum(accessory_amount), 0) LIMIT 1"
            )
        ).fetchone()
    data = july["reply"]["data"]
    assert data.get("outcome") == "answer", july["reply"]["text"]
    assert abs(data["value"] - store4) < 1e-9 and data["window"]["start"].startswith("2026-07-01")
    data = chain["reply"]["data"]
    assert data.get("outcome") == "answer", chain["reply"]["text"]
    assert abs(data["value"] - everyone) < 1e-9, chain["reply"]["text"]
    data = least["reply"]["data"]
    assert data.get("outcome") == "answer", least["reply"]["text"]
    assert data["leader"] == {"store": lowest["store_id"]}, least["reply"]["text"]


async def test_a_financial_quarter_is_asked_about_then_read_from_the_year_start_the_user_gives(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        asked = await chat(client, "How many sales did Store 4 make in fiscal Q1?")
        answered = (await chat(client, "Our fiscal year starts on 1 May.", asked["thread_id"]))["values"]
    assert asked["values"]["reply"]["data"]["outcome"] == "clarify", asked["values"]["reply"]["text"]
    data = answered["reply"]["data"]
    assert data.get("outcome") == "answer", answered["reply"]["text"]
    assert data["window"]["start"].startswith("2026-05-01") and data["window"]["end"].startswith("2026-08-01")
    assert data["params"]["store_id"] == "4"


async def test_a_store_named_by_a_property_is_the_store_the_data_says_and_in_dollars_is_its_money(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """A store named "our newest" is read from the stores' opening dates, never answered for every store; "the
    biggest shop" names two stores (by staff and by sales), so it is asked; "in dollars" after a count
    of sales asks their money."""
    async with _client(live, keys["demo-retail"]) as client:
        newest = await chat(client, "How many sales did our newest store make in August 2026?")
        dollars = (await chat(client, "sorry, I meant in dollars", newest["thread_id"]))["values"]
        biggest = (await chat(client, "What was the attach rate at our biggest shop in July 2026?"))["values"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        store = (
            await (
                await conn.execute(f"SELECT store_id FROM {schema}.stores ORDER BY opened_on DESC LIMIT 1")
            ).fetchone()
        )["store_id"]
        row = await (
            await conn.execute(
                f"SELECT count(*) AS n, sum(device_amount + coalesce(accessory_amount, 0))::float AS money "
                f"FROM {schema}.transactions WHERE store_id = %s AND sold_at >= '2026-08-01' "
                "AND sold_at < '2026-09-01'",
                (store,),
            )
        ).fetchone()
    data = newest["values"]["reply"]["data"]
    assert data.get("outcome") == "answer", newest["values"]["reply"]["text"]
    assert (data["params"]["store_id"], data["value"]) == (str(store), row["n"])
    assert data["named"]["store_id"] == store and data["verification"][0]["verdict"] == "backed"
    data = dollars["reply"]["data"]
    assert data.get("outcome") == "answer", dollars["reply"]["text"]
    assert data["metric"] == "total revenue" and data["params"]["store_id"] == str(store)
    assert data["value"] == pytest.approx(row["money"])
    assert biggest["reply"]["data"]["outcome"] == "clarify", biggest["reply"]["text"]
    assert "staff count" in biggest["reply"]["text"] and "number of sales" in biggest["reply"]["text"]


async def test_a_store_named_by_a_superlative_is_answered_for_that_store_or_asked_when_the_data_lacks_it(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """A superlative over the stores' attributes names the one store the data puts at that end, answered
    with the figure asked ("the branch that opened most recently": the latest opening date; "the store with
    the most staff": the staff count), never every store ranked by it; an attribute the data lacks ("floor
    space") is asked about, naming what is missing."""
    async with _client(live, keys["demo-retail"]) as client:
        recent = await chat(
            client, "What were the refunds at the branch that opened most recently in August 2026?"
        )
        staffed = await chat(
            client, "What was the attach rate at the store with the most staff in July 2026?"
        )
        floor = await chat(client, "accessory revenue at the biggest store by floor space in August 2026")
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        latest = (
            await (
                await conn.execute(f"SELECT store_id FROM {schema}.stores ORDER BY opened_on DESC LIMIT 1")
            ).fetchone()
        )["store_id"]
        most = await (
            await conn.execute(
                f"SELECT store_id, count(*) AS n FROM {schema}.staff GROUP BY store_id ORDER BY n DESC LIMIT 2"
            )
        ).fetchall()
    data = recent["values"]["reply"]["data"]
    assert data.get("outcome") == "answer" and data["metric"] == "refunds", recent["values"]["reply"]["text"]
    assert data["params"]["store_id"] == str(latest) and data["named"]["store_id"] == latest
    data = staffed["values"]["reply"]["data"]
    if most[0]["n"] == most[1]["n"]:
        assert data.get("outcome") == "clarify", staffed["values"]["reply"]["text"]  # a tie names no store
    else:
        assert data.get("outcome") == "answer" and data["metric"] == "attach rate", staffed["values"]["reply"]
        assert data["params"]["store_id"] == str(most[0]["store_id"])
    reply = floor["values"]["reply"]
    assert reply["status"] != "success" and reply["data"]["outcome"] == "clarify", reply["text"]
    assert "floor space" in reply["data"]["missing"] and "floor space" in reply["text"], reply


@pytest.mark.parametrize(
    ("message", "continues"),
    [
        ("what if we gave it till the end of March?", True),  # nine words, five of them its own
        ("and could we make that 10 percentage points by the end of March instead?", True),
        ("please write me a short poem about the sea and the sky at night", False),
    ],
)
def test_a_message_that_restates_a_deadline_or_target_is_short_by_its_own_words(
    message: str, continues: bool
) -> None:
    previous = {"target": {"kind": "agent", "name": "master_agent"}}
    refused = RouteTarget(kind="out_of_scope", name="out_of_scope")
    assert inherits_target(message, refused, previous) is continues


def test_a_follow_up_naming_a_store_by_a_property_keeps_it_and_one_naming_none_keeps_the_one_before() -> None:
    before = {"goal": "What did our longest-established shop turn over in July?", "entities": {}}
    metrics = RETAIL.data_metrics
    other, _ = carried_over("and the quietest one?", {}, before, metrics, NOW)
    assert "quietest one" in other and "longest-established" not in other
    same, _ = carried_over("and in August?", {}, before, metrics, NOW)
    assert "our longest-established shop" in same and "August" in same


async def test_a_change_between_months_two_regions_and_stores_judged_on_refunds_answer_what_is_asked(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        change = (await chat(client, "Did store 6's attach rate go up by a third between May and August?"))[
            "values"
        ]
        regions = await chat(client, "Did the west bring in more accessory revenue than the east in Q3?")
        closing = (await chat(client, "thanks a ton, you're a lifesaver", regions["thread_id"]))["values"]
        judged = (await chat(client, "Which did better on refunds in August, store 1 or store 4?"))["values"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)

        async def value(expression: str, where: str) -> float:
            row = await (
                await conn.execute(f"SELECT {expression} AS v FROM {schema}.transactions WHERE {where}")
            ).fetchone()
            return float(row["v"])

        attach = "avg(accessory_attached::int)::float"
        may = await value(attach, "store_id = 6 AND sold_at >= '2026-05-01' AND sold_at < '2026-06-01'")
        august = await value(attach, "store_id = 6 AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'")
        q3 = "sold_at >= '2026-07-01' AND sold_at < '2026-10-01'"
        west, east = [
            await value(
                "sum(accessory_amount)::float",
                f"{q3} AND store_id IN (SELECT store_id FROM {schema}.stores WHERE region = '{name}')",
            )
            for name in ("west", "east")
        ]
        refunds = "avg(refunded::int)::float"
        aug = "sold_at >= '2026-08-01' AND sold_at < '2026-09-01'"
        first = await value(refunds, f"store_id = 1 AND {aug}")
        fourth = await value(refunds, f"store_id = 4 AND {aug}")
    data = change["reply"]["data"]
    assert data.get("outcome") == "answer", (change["routing"], change["reply"]["text"])
    assert data["value"] == pytest.approx(august - may), change["reply"]["text"]
    assert data["window"]["start"].startswith("2026-05-01") and data["window"]["end"].startswith("2026-09-01")
    data = regions["values"]["reply"]["data"]
    assert data.get("outcome") == "answer", regions["values"]["reply"]["text"]
    assert data["value"] == pytest.approx(west - east), regions["values"]["reply"]["text"]
    # Thanks close the thread: the figure before is not answered again.
    assert (closing["reply"].get("data") or {}).get("outcome") != "answer", closing["reply"]["text"]
    data = judged["reply"]["data"]
    assert (data.get("metric"), set(data.get("each") or ())) == ("refund rate", {"1", "4"}), judged["reply"][
        "text"
    ]
    assert data["value"] == pytest.approx(first - fourth)


async def test_a_comparative_between_two_periods_answers_their_change_and_no_change_past_the_data(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _client(live, keys["demo-retail"]) as client:
        more = (
            await chat(client, "how much more accessory revenue did store 3 make in August than in July?")
        )["values"]
        before = (await chat(client, "did store 3 make less accessory revenue in April than in March 2026?"))[
            "values"
        ]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)

        async def revenue(start: str, end: str) -> float:
            row = await (
                await conn.execute(
                    f"SELECT coalesce(sum(accessory_amount), 0)::float AS v FROM {schema}.transactions "
                    f"WHERE store_id = 3 AND sold_at >= '{start}' AND sold_at < '{end}'"
                )
            ).fetchone()
            return float(row["v"])

        july, august = await revenue("2026-07-01", "2026-08-01"), await revenue("2026-08-01", "2026-09-01")
    data = more["reply"]["data"]
    assert data["outcome"] == "answer" and more["reply"]["status"] == "success", more["reply"]["text"]
    assert data["value"] == pytest.approx(august - july)
    assert data["window"]["start"].startswith("2026-07-01") and data["window"]["end"].startswith("2026-09-01")
    # March is before the data's first day: no change read from a month of "zero" sales, and never success;
    # April's figure is what can be said (a partial answer).
    assert before["reply"]["data"]["outcome"] == "partial", before["reply"]["text"]
    assert before["reply"]["status"] != "success"
    assert "has nothing for March 2026" in before["reply"]["text"]


async def test_a_store_named_by_a_description_is_read_against_the_stores_table_or_asked_about(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """ "the shop we opened in May 2019" is the one store whose opening date falls then; "the branch that
    opened in spring 2019" fits three, and "our anchor store" a property no column holds: both are asked
    about, never answered for every store."""
    async with _client(live, keys["demo-retail"]) as client:
        may = (await chat(client, "The shop we opened in May 2019 - how many refunds in August 2026?"))[
            "values"
        ]
        spring = (await chat(client, "Refund rate at the branch that opened in spring 2019, July 2026?"))[
            "values"
        ]
        anchor = (await chat(client, "How did our anchor store do on attach in July 2026?"))["values"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        opened = {
            row["store_id"]: row["opened_on"]
            for row in await (
                await conn.execute(f"SELECT store_id, opened_on FROM {schema}.stores")
            ).fetchall()
        }
        [store] = [s for s, day in opened.items() if (day.year, day.month) == (2019, 5)]
        row = await (
            await conn.execute(
                f"SELECT count(*) FILTER (WHERE refunded) AS n FROM {schema}.transactions WHERE store_id = %s "
                "AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'",
                (store,),
            )
        ).fetchone()
    data = may["reply"]["data"]
    assert data.get("outcome") == "answer", may["reply"]["text"]
    assert (data["params"]["store_id"], data["value"]) == (str(store), row["n"])
    assert data["described"]["store_id"] == store and data["verification"][0]["verdict"] == "backed"
    data = spring["reply"]["data"]
    assert data.get("outcome") == "clarify", spring["reply"]["text"]
    assert data["described"]["fits"] == sorted(
        s for s, day in opened.items() if day.year == 2019 and 3 <= day.month <= 5
    )
    data = anchor["reply"]["data"]
    assert data.get("outcome") == "clarify" and data["missing"] == ["store"], anchor["reply"]["text"]
    assert "anchor" in anchor["reply"]["text"]


async def test_a_change_from_a_period_past_the_data_gives_the_period_it_has_as_partial(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """October is past the data: no change can be read, but September's figure can, said as a partial
    answer that names the missing month (never a change against a zero, nor nothing at all)."""
    async with _client(live, keys["demo-retail"]) as client:
        values = (
            await chat(client, "Did store 3 sell fewer phones in October 2026 than in September 2026?")
        )["values"]
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        row = await (
            await conn.execute(
                f"SELECT count(*) AS n FROM {schema}.transactions WHERE store_id = 3 "
                "AND sold_at >= '2026-09-01' AND sold_at < '2026-10-01'"
            )
        ).fetchone()
    reply = values["reply"]
    data = reply["data"]
    assert data.get("outcome") == "partial" and reply["status"] == "partial", reply["text"]
    assert data["value"] == row["n"] and data["window"]["start"].startswith("2026-09-01"), reply["text"]
    assert any("October" in missing for missing in data["missing"]), data["missing"]


async def test_a_breakdown_a_statistic_and_each_stores_change_are_answered_from_the_rows(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """ "By month", "the median", "which store improved most between two quarters": each group's own
    figure, the statistic asked (not the average) and each store's change, every one as the rows say."""
    async with _client(live, keys["demo-retail"]) as client:
        monthly = (await chat(client, "refund rate for store 2 by month in Q3 2026"))["values"]["reply"]
        median = (await chat(client, "what's the median device price at store 4 in August 2026"))["values"]
        improved = await chat(client, "Which store improved its attach rate the most from Q2 to Q3 2026?")
        bottom = (await chat(client, "bottom three stores by refund rate in August 2026"))["values"]["reply"]
        rate_median = (await chat(client, "what was the median refund rate at store 3 in July"))["values"]
        regions = await chat(client, "How did each region's refund rate move between July and August 2026?")
    schema = await data_schema(live)
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:

        async def rows(sql: str) -> list[dict[str, Any]]:
            return list(await (await conn.execute(sql.format(schema=schema))).fetchall())

        months = await rows(
            "SELECT to_char(sold_at AT TIME ZONE 'UTC', 'YYYY-MM') AS key, avg(refunded::int)::float AS value "
            "FROM {schema}.transactions WHERE store_id = 2 AND sold_at >= '2026-07-01' AND sold_at < '2026-10-01' "
            "GROUP BY 1"
        )
        (truth,) = await rows(
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY device_amount)::float AS value FROM "
            "{schema}.transactions WHERE store_id = 4 AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'"
        )
        quarters = await rows(
            "SELECT store_id, avg(accessory_attached::int) FILTER (WHERE sold_at >= '2026-07-01')::float"
            " - avg(accessory_attached::int) FILTER (WHERE sold_at < '2026-07-01')::float AS change"
            " FROM {schema}.transactions WHERE sold_at >= '2026-04-01' AND sold_at < '2026-10-01'"
            " GROUP BY store_id ORDER BY change DESC"
        )
        moved = await rows(
            "SELECT s.region AS key, avg(t.refunded::int) FILTER (WHERE t.sold_at >= '2026-08-01')::float"
            " - avg(t.refunded::int) FILTER (WHERE t.sold_at < '2026-08-01')::float AS value"
            " FROM {schema}.transactions t JOIN {schema}.stores s USING (store_id)"
            " WHERE t.sold_at >= '2026-07-01' AND t.sold_at < '2026-09-01' GROUP BY s.region"
        )
        lowest = await rows(
            "SELECT store_id FROM {schema}.transactions WHERE sold_at >= '2026-08-01' AND sold_at < '2026-09-01'"
            " GROUP BY store_id ORDER BY avg(refunded::int) ASC LIMIT 3"
        )
    assert monthly["data"]["outcome"] == "answer", monthly["text"]
    said = monthly["data"]["breakdown"]["values"]
    assert set(said) == {"2026-07", "2026-08", "2026-09"}
    assert all(abs(said[row["key"]] - row["value"]) < 1e-9 for row in months)
    assert median["reply"]["data"]["metric"] == "median device amount", median["reply"]["text"]
    assert abs(median["reply"]["data"]["value"] - truth["value"]) < 1e-9
    data = improved["values"]["reply"]["data"]
    assert data["leader"] == {"store": quarters[0]["store_id"]}, improved["values"]["reply"]["text"]
    assert abs(data["value"] - quarters[0]["change"]) < 1e-9
    assert list(bottom["data"]["breakdown"]["values"]) == [str(row["store_id"]) for row in lowest]
    # Each region's own change, not the change of all the sales together.
    changes = regions["values"]["reply"]["data"]["breakdown"]["values"]
    assert {row["key"]: round(row["value"], 9) for row in moved} == {
        k: round(v, 9) for k, v in changes.items()
    }
    # A share over all the sales has no median of its own: asked, never the rate presented as one.
    assert rate_median["reply"]["data"]["outcome"] == "clarify", rate_median["reply"]["text"]
    assert rate_median["reply"]["status"] != "success"


async def test_a_share_of_the_money_is_its_part_over_the_whole_from_the_rows(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """ "What % of the revenue came from phones", "what portion of the takings was refunded", "what share
    of every store's turnover did store 4 account for": a part of the money over all of it, never the
    share of sales with an accessory or refunded presented as one."""
    async with _client(live, keys["demo-retail"]) as client:
        phones = (await chat(client, "What % of store 3's August 2026 revenue came from phones?"))["values"]
        refunded = (await chat(client, "In Q3 2026, what portion of store 6's takings was later refunded?"))[
            "values"
        ]
        store = (
            await chat(
                client, "What share of all the stores' September 2026 turnover did store 4 account for?"
            )
        )["values"]
        sales = (await chat(client, "what share of store 2's sales had an accessory in July 2026"))["values"]
    schema = await data_schema(live)
    async with live.server.config.app.state.service.resources.database.pool.connection() as conn:

        async def value(sql: str) -> float:
            row = await (await conn.execute(sql.format(schema=schema))).fetchone()
            return float(row["value"])

        total = "device_amount + coalesce(accessory_amount, 0)"
        phone_share = await value(
            f"SELECT sum(device_amount)::float / sum({total}) AS value FROM {{schema}}.transactions"
            " WHERE store_id = 3 AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'"
        )
        refund_share = await value(
            f"SELECT coalesce(sum({total}) FILTER (WHERE refunded), 0)::float / sum({total}) AS value"
            " FROM {schema}.transactions WHERE store_id = 6 AND sold_at >= '2026-07-01' AND sold_at < '2026-10-01'"
        )
        store_share = await value(
            f"SELECT sum({total}) FILTER (WHERE store_id = 4)::float / sum({total}) AS value"
            " FROM {schema}.transactions WHERE sold_at >= '2026-09-01' AND sold_at < '2026-10-01'"
        )
        attach = await value(
            "SELECT avg(accessory_attached::int)::float AS value FROM {schema}.transactions"
            " WHERE store_id = 2 AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01'"
        )
    for values, truth in (
        (phones, phone_share),
        (refunded, refund_share),
        (store, store_share),
        (sales, attach),
    ):
        reply = values["reply"]
        assert reply["data"].get("outcome") == "answer", reply["text"]
        assert abs(reply["data"]["value"] - truth) < 1e-9, reply["text"]
    assert sales["reply"]["data"]["metric"] == "attach rate"
