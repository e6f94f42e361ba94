"""Retail customer-success domain pack: demo tenant, tools and the seed's sub-agent tree."""

from master_agent.capabilities import DomainPack, register_domain_pack
from master_agent.domains.retail.agents import MASTER, SUB_AGENTS
from master_agent.domains.retail.data import DEMO_PROFILES, DEMO_TENANT, HIDDEN_COLUMNS, install
from master_agent.domains.retail.tools import PROBLEMS, build_tools, cause_holds_at, default_entities

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
    check_precondition=cause_holds_at,
)
register_domain_pack(RETAIL)

__all__ = ["DEMO_TENANT", "RETAIL"]
