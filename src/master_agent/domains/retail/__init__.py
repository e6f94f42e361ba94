"""Retail customer-success domain pack: demo tenant, tools and the seed's sub-agent tree."""

from master_agent.capabilities import DataMetric, DomainPack
from master_agent.capabilities.spec import routing_examples
from master_agent.capabilities.tools.sql import ReadOnlySql
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
from master_agent.routing.queries import QueryAnswer, QueryRequest

DATA_METRICS = (
    DataMetric(
        name="attach rate",
        aliases=("accessory attach rate", "attach-rate", "attachment rate"),
        table="transactions",
        expression="avg(accessory_attached::int)::float",
        time_column="sold_at",
        unit="ratio",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
    DataMetric(
        name="transactions",
        aliases=("sales count", "number of sales", "device sales", "how many sales"),
        table="transactions",
        expression="count(*)",
        time_column="sold_at",
        unit="count",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
    DataMetric(
        name="average accessory amount",
        aliases=("accessory spend", "average accessory sale", "accessory revenue per sale"),
        table="transactions",
        expression="avg(accessory_amount) FILTER (WHERE accessory_attached)::float",
        time_column="sold_at",
        unit="currency",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
    DataMetric(
        name="accessory revenue",
        aliases=("accessory sales revenue", "total accessory sales"),
        table="transactions",
        expression="coalesce(sum(accessory_amount), 0)::float",
        time_column="sold_at",
        unit="currency",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
    DataMetric(
        name="refund rate",
        aliases=("share of sales refunded", "refund percentage", "return rate"),
        table="transactions",
        expression="avg(refunded::int)::float",
        time_column="sold_at",
        unit="ratio",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
    DataMetric(
        name="refunds",
        aliases=("number of refunds", "refund count", "refunded sales", "returns"),
        table="transactions",
        expression="count(*) FILTER (WHERE refunded)",
        time_column="sold_at",
        unit="count",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
    DataMetric(
        name="average device amount",
        aliases=("average device sale", "average device price", "average sale amount", "average ticket"),
        table="transactions",
        expression="avg(device_amount)::float",
        time_column="sold_at",
        unit="currency",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
    DataMetric(
        name="device revenue",
        aliases=("device sales revenue", "total device sales", "device sales amount"),
        table="transactions",
        expression="coalesce(sum(device_amount), 0)::float",
        time_column="sold_at",
        unit="currency",
        filters={"store_id": "store_id", "staff_id": "staff_id"},
        observation_noun="device sales",
    ),
)


STORE_RANKING = """
SELECT store_id, avg(accessory_attached::int)::float AS attach_rate, count(*) AS device_sales
FROM transactions GROUP BY store_id ORDER BY attach_rate DESC
"""


async def rank_stores(request: QueryRequest) -> QueryAnswer:
    """The pack's own query kind: stores ranked by attach rate over their whole history (one query)."""
    rows = (await ReadOnlySql(request.tool_context).query(STORE_RANKING)).rows
    lines = [
        f"{i}. Store {r['store_id']}: {r['attach_rate']:.1%} ({r['device_sales']} device sales)"
        for i, r in enumerate(rows, 1)
    ]
    text = (
        "Stores by accessory attach rate, whole history:\n"
        + "\n".join(lines)
        + f"\nQuery: {' '.join(STORE_RANKING.split())}"
    )
    return QueryAnswer(
        text=text, handler="store_ranking", data={"stores": rows, "sql": " ".join(STORE_RANKING.split())}
    )


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
