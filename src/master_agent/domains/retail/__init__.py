"""Retail customer-success domain pack: demo tenant, tools and the seed's sub-agent tree."""

import re
from typing import Literal

from master_agent.capabilities import DataMetric, DomainPack
from master_agent.capabilities.spec import EntityOrder, routing_examples
from master_agent.domains.retail.agents import MASTER, SUB_AGENTS
from master_agent.domains.retail.data import DEMO_PROFILES, DEMO_TENANT, HIDDEN_COLUMNS, install
from master_agent.domains.retail.goals import make_goal_reader, missing_information
from master_agent.domains.retail.tools import (
    PROBLEM_METRICS,
    PROBLEMS,
    build_tools,
    cause_holds_at,
    default_entities,
)
from master_agent.routing.queries import QueryAnswer, QueryRequest, data_question

Unit = Literal["ratio", "count", "currency", "number"]

#: Stores by region, read from the data: "our east stores" is every store the data puts in the east.
REGIONS = {"region": ("store_id", "SELECT region AS value, store_id AS member FROM stores")}
SALES = {"store_id": "store_id", "staff_id": "staff_id"}
#: The table listing the stores, read when a question names one by a description ("the flagship").
MEMBERS = {"store_id": "stores"}
#: Stores named by a property the data settles: "our newest store" is the one opened last; "the
#: biggest shop" is asked about when its staff count and its sales name different stores.
STORE_ORDERS = (
    EntityOrder(
        entity="store_id",
        query="SELECT store_id AS member, opened_on AS value FROM stores",
        measure="opening date",
        high=("newest", "latest", "youngest", "most recent", "most recently opened", "last opened"),
        low=("oldest", "longest-running", "longest-established", "longest-standing", "first", "original",
             "earliest", "first opened"),
    ),
    EntityOrder(
        entity="store_id",
        query="SELECT store_id AS member, count(*) AS value FROM staff GROUP BY store_id",
        measure="staff count",
        high=("biggest", "largest", "best-staffed"),
        low=("smallest", "least-staffed"),
    ),
    EntityOrder(
        entity="store_id",
        query="SELECT store_id AS member, count(*) AS value FROM transactions GROUP BY store_id",
        measure="number of sales",
        high=("biggest", "largest", "busiest"),
        low=("smallest", "quietest"),
    ),
)  # fmt: skip


#: What this retailer's customers and staff call a device: every alias naming a device ("average device
#: price") is also said with these words ("average handset price", "phone sales"), so a figure of the
#: devices is found whichever word a question uses, and none of them reads as data the tenant lacks.
DEVICE_WORDS = ("phone", "handset", "mobile", "hardware")


def _as_devices_are_called(aliases: tuple[str, ...], name: str = "") -> tuple[str, ...]:
    """``aliases`` and each of them, or the figure's ``name``, naming a device said with every one of
    ``DEVICE_WORDS`` ("hardware revenue" for the device revenue)."""
    said = [
        re.sub(r"\bdevice", word, alias)
        for alias in (name, *aliases)
        if re.search(r"\bdevice", alias)
        for word in DEVICE_WORDS
    ]
    return tuple(dict.fromkeys([*aliases, *said]))


def _sales(
    name: str,
    expression: str,
    unit: Unit,
    aliases: tuple[str, ...],
    means: str,
    lower_is_better: bool = False,
    money: str | None = None,
    average: str | None = None,
) -> DataMetric:
    """A figure of the transactions, by store, staff member or region, over any window."""
    return DataMetric(
        name=name,
        description=means,
        aliases=_as_devices_are_called(aliases, name),
        table="transactions",
        expression=expression,
        time_column="sold_at",
        unit=unit,
        filters=SALES,
        observation_noun="device sales",
        lower_is_better=lower_is_better,
        money=money,
        average=average,
        groups=REGIONS,
        orders=STORE_ORDERS,
        members=MEMBERS,
    )


def _staff(name: str, expression: str, unit: Unit, aliases: tuple[str, ...], means: str) -> DataMetric:
    """A figure of the staff list: a snapshot (the list keeps no history), by store or region."""
    return DataMetric(
        name=name,
        description=means,
        aliases=aliases,
        table="staff",
        expression=expression,
        time_column=None,
        unit=unit,
        filters={"store_id": "store_id"},
        observation_noun="staff members",
        groups=REGIONS,
        orders=STORE_ORDERS,
        members=MEMBERS,
    )


DATA_METRICS = (
    _sales("attach rate", "avg(accessory_attached::int)::float", "ratio",
           ("accessory attach rate", "attach-rate", "attachment rate"),
           "share of device sales where the customer also bought an accessory such as a case or charger"),
    _sales("transactions", "count(*)", "count", ("sales count", "number of sales", "device sales", "how many sales", "sales", "devices sold",
            "bills", "units sold"),
           "how many device sales were made, the number of sales", money="total revenue"),
    _sales("average accessory amount", "avg(accessory_amount) FILTER (WHERE accessory_attached)::float", "currency",
           ("accessory spend", "average accessory sale", "accessory revenue per sale"),
           "how much customers spend on an accessory on average when they buy one"),
    _sales("accessory revenue", "coalesce(sum(accessory_amount), 0)::float", "currency",
           ("accessory sales revenue", "total accessory sales"), "total money taken from accessory sales"),
    _sales("refund rate", "avg(refunded::int)::float", "ratio",
           ("share of sales refunded", "refund percentage", "return rate"),
           "share of sales that were refunded or returned", lower_is_better=True),
    _sales("refunds", "count(*) FILTER (WHERE refunded)", "count",
           ("number of refunds", "refund count", "refunded sales", "returns"),
           "how many sales were refunded or returned", lower_is_better=True),
    _sales("average device amount", "avg(device_amount)::float", "currency",
           ("average device sale", "average device price", "average sale amount", "asp"),
           "the average price paid for a phone or device"),
    _sales("device revenue", "coalesce(sum(device_amount), 0)::float", "currency",
           ("device sales revenue", "total device sales", "device sales amount", "device takings"),
           "total money taken from phone and device sales", average="average device amount"),
    # Gross: a refund is a flag on the sale, nothing is netted out.
    _sales("total revenue", "coalesce(sum(device_amount + coalesce(accessory_amount, 0)), 0)::float", "currency",
           ("revenue", "takings", "total takings", "total sales", "turnover", "gross sales"),
           "all the money taken, devices and accessories together", average="average basket"),
    _sales("average basket", "avg(device_amount + coalesce(accessory_amount, 0))::float", "currency",
           ("average basket value", "basket size", "average transaction value", "average spend per sale",
            "average ticket", "aov"),
           "how much a customer spends per sale on average, device and accessory together"),
    _staff("staff count", "count(*)", "count", ("headcount", "number of staff", "staff members", "employees"),
           "how many people work at a store"),
    _staff("trained staff", "count(*) FILTER (WHERE training_completed)", "count",
           ("staff who completed training", "staff who have completed their training", "trained employees",
            "completed training"), "how many staff members have completed their training"),
    _staff("trained staff share", "avg(training_completed::int)::float", "ratio",
           ("share of staff trained", "training completion rate", "share of trained staff",
            "share of staff completed training"),
           "the share of staff who have completed their training"),
    _staff("average tenure", "avg(tenure_months)::float", "number", ("average tenure months", "tenure"),
           "how long staff have been with the company, the months they have worked at the store on average"),
    _staff("average training hours", "avg(training_hours)::float", "number", ("training hours",),
           "how many hours of training staff have had on average"),
)  # fmt: skip


async def rank_stores(request: QueryRequest) -> QueryAnswer:
    """The pack's own query kind: stores in order of a figure (the attach rate when the question names
    none) over the window the question names, by the data handler's one ranking."""
    return await data_question(request, default_metric="attach rate")


ROUTING_EXAMPLES = tuple(
    routing_examples(
        "EXECUTE",
        """
        Increase Store 5's accessory attach rate by 20% within 60 days
        Raise the attach rate at Store 2 by 15% this quarter
        Our accessory sales per phone are too low at Store 8, fix it
        Improve accessory attach rate across the Store 3 team
        Get more customers to buy a case with their phone at Store 1
        Boost accessory attach at Store 6 by 10 percent in 90 days
        Why is Store 4 selling so few accessories and what should we do
        Help Store 7 sell more accessories with each device
        Push the accessory attach rate up at Store 3 by 10 percent
        Lift attach rate at Store 9 by 15% within 100 days
        Store 2's attach rate must go up 5% by the end of the quarter
        """,
        domain="retail",
    )
    + routing_examples(
        "QUERY",
        """
        What was Store 3's attach rate last month
        What is the attach rate at Store 5
        How many device sales did Store 2 have last week
        What's the average accessory amount at Store 6 this year
        Show me Store 1's accessory revenue over the last 30 days
        How many transactions did we have last month
        What was our attach rate this month
        Give me Store 4's attach rate for the previous quarter
        """,
        "data",
        "retail",
    )
    + routing_examples(
        "QUERY",
        """
        Which store has the best attach rate
        Rank our stores by attach rate
        Which stores are worst at selling accessories
        Show the top and bottom stores for accessory attach
        """,
        "store_ranking",
        "retail",
    )
)

RETAIL = DomainPack(
    name="retail",
    master=MASTER,
    sub_agents=SUB_AGENTS,
    build_tools=build_tools,
    install=install,
    demo_tenants=tuple(DEMO_PROFILES),
    default_entities=default_entities,
    hidden_columns=HIDDEN_COLUMNS,
    problems=PROBLEMS,
    problem_metrics=PROBLEM_METRICS,
    check_precondition=cause_holds_at,
    routing_examples=ROUTING_EXAMPLES,
    data_metrics=DATA_METRICS,
    query_handlers={"store_ranking": rank_stores},
    goal_entities=make_goal_reader(DATA_METRICS, PROBLEMS, PROBLEM_METRICS),
    missing_information=missing_information,
)

__all__ = ["DEMO_TENANT", "RETAIL"]
