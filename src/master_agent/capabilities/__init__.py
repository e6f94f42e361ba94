"""What agents can use: agent specs, the sub-agent envelope, plain tools and the per-tenant registry."""

from master_agent.capabilities.envelope import SubAgentEnvelope
from master_agent.capabilities.registry import (
    DomainPack,
    TenantCapabilities,
    TenantRecord,
    bump_capability_version,
    domain_pack,
    implied_entities,
    install_tenant,
    load_domain_packs,
    load_tenant,
    provision_tenant_readers,
    register_domain_pack,
    registered_domain_packs,
    tenant_capabilities,
)
from master_agent.capabilities.spec import (
    TIERS,
    AgentLimits,
    AgentSpec,
    DataMetric,
    MissingInformation,
    RoutingExample,
    Tier,
    tier_allows,
)

__all__ = [
    "TIERS",
    "AgentLimits",
    "AgentSpec",
    "DataMetric",
    "DomainPack",
    "MissingInformation",
    "RoutingExample",
    "SubAgentEnvelope",
    "TenantCapabilities",
    "TenantRecord",
    "Tier",
    "bump_capability_version",
    "domain_pack",
    "implied_entities",
    "install_tenant",
    "load_domain_packs",
    "load_tenant",
    "provision_tenant_readers",
    "register_domain_pack",
    "registered_domain_packs",
    "tenant_capabilities",
    "tier_allows",
]
