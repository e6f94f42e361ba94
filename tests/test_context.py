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


def test_a_number_before_a_holiday_day_is_no_duration() -> None:
    # With the holiday read as the time, "store 8 on Janmashtami day" left "store 8 day": an "8 days".
    assert extract_entities("accessory attach % of store 8 on Janmashtami day itself")["store_id"] == 8
    assert extract_entities("refunds at store 3 on Diwali day")["store_id"] == 3
    assert "store_id" not in extract_entities("refunds over the store's first 8 days")
