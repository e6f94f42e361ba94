"""A category the request defines by its own members ("dangerous goods such as power banks, aerosols
or lighters", "power banks (lithium)"): each member is a case the built system must read, and the
gate of a system that does not read one fails, naming that case."""

from __future__ import annotations

from typing import Any

from master_agent.meta.design import design_eval, design_system
from master_agent.meta.requirements import listed_members
from master_agent.runtime import RuntimeResources
from tests.test_meta_conditions import _gate_of
from tests.test_meta_rules import _answer, _artifact, _system, built

__all__ = ["built"]  # the built-system fixture of the rule tests

COURIER = (
    "Build an agent system that checks courier requests. Each request gives the sender, the weight and "
    "what is inside. It returns a JSON object with service (air or ground). Requests with dangerous goods "
    'such as power banks, aerosols or lighters go by ground (service "ground"); every other request goes '
    'by air (service "air").'
)
FIELDS = {"service": ["air", "ground"]}


def test_the_members_a_request_lists_are_read_from_its_own_words() -> None:
    assert listed_members(
        "dangerous goods such as power banks, aerosols or lighters go by ground", FIELDS
    ) == [
        "power banks",
        "aerosols",
        "lighters",
    ]
    assert listed_members("Bookings with power banks (lithium) go by ground", FIELDS) == ["lithium"]
    assert listed_members("sweets (e.g. toffee, fudge) are held", FIELDS) == ["toffee", "fudge"]
    # A value given, a definition or numbers in parentheses list no members.
    for said in ('go by ground (service "ground")', "(1 MB = 1,000 kB)", "(without a label, it is empty)"):
        assert listed_members(said, FIELDS) == []


def test_each_listed_member_is_a_case_with_the_value_the_request_gives_it() -> None:
    system = design_system(COURIER, None, "langgraph")
    (ground, _) = system.requirements[0].rules
    assert ground.mentions == ["dangerous goods", "power banks", "aerosols", "lighters"]
    cases = {str(next(iter(c.inputs.values()))): c.expect for c in design_eval(system).cases}
    for member in ("power banks", "aerosols", "lighters"):
        assert cases[f"Request about {member}, please help."] == {"service": "ground"}, cases


async def test_a_system_that_misses_a_listed_member_fails_its_gate_naming_the_case(
    built: tuple[Any, str], resources: RuntimeResources
) -> None:
    graph, tenant = built
    result, system = await _system(resources, graph, tenant, COURIER, "courier_members")
    assert result["gates"]["quality"]["passed"] is True, result["gates"]
    assert (await _answer(system, tenant, "Request from Ada: two power banks, 1 kg."))["service"] == "ground"
    spec = await _artifact(resources, result, "SystemSpec")
    evaluation = await _artifact(resources, result, "EvalSpec")
    # The same system with "power banks" no longer read (as its rules were read before members were
    # items of their own): the case the request's own words give fails its gate.
    for holder in [*spec["requirements"], *(c for c in spec["components"] if c.get("decision"))]:
        for rule in holder.get("rules") or holder.get("decision") or []:
            rule["mentions"] = [m for m in rule.get("mentions", []) if m != "power banks"]
    spec["name"] = "courier_members_missing"
    quality = await _gate_of(graph, tenant, spec, evaluation)
    assert quality["passed"] is False, quality
    assert any("member" in str(u) for u in quality["unmet"]), quality["unmet"]
