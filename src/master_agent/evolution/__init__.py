"""The self-evolution loop: village knowledge (outcomes, learning and reuse follow)."""

from master_agent.evolution.knowledge import KnowledgeStore, PatternCreate, PatternMatch, tenant_session

__all__ = ["KnowledgeStore", "PatternCreate", "PatternMatch", "tenant_session"]
