from __future__ import annotations

from master_agent.runtime.context import extract_entities


def test_retail_goal_entities() -> None:
    entities = extract_entities("Increase Store 5's accessory attach rate by 20% within 60 days")
    assert entities == {"store_id": 5, "target_percent": 20.0, "timeline_days": 60}


def test_other_domains_and_units() -> None:
    entities = extract_entities("Reduce churn in Region 3 by 15 percent over 8 weeks with $12k")
    assert entities == {"region_id": 3, "target_percent": 15.0, "timeline_days": 56, "budget": 12000.0}


def test_prepositions_are_not_entities() -> None:
    assert "by_id" not in extract_entities("grow revenue by 3 points in 2 months")
    assert extract_entities("grow revenue by 3 points in 2 months")["timeline_days"] == 60
