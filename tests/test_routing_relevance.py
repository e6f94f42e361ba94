"""The relevance head's features (issue 42): what a (message, agent) pair is scored on names no agent
and no domain, so the trained weights apply to any tenant's agents."""

from __future__ import annotations

import numpy as np

from master_agent.routing.relevance import FEATURES, AgentTexts, pair_features, stem_weights, stems


def _agent(name: str, spec: list[list[float]], pack: bool = False) -> AgentTexts:
    return AgentTexts(
        name=name,
        pack=pack,
        domain="retail",
        spec=np.asarray(spec, dtype=np.float64),
        examples=np.zeros((0, 2)),
        stems=stems(name),
    )


def test_inflections_of_a_word_share_its_stem_and_common_words_have_none() -> None:
    assert stems("returned items") & stems("returns_digest") == {"retur"}
    assert stems("what is the summary for my store") == stems("summarise store")


def test_a_word_every_agent_uses_weighs_nothing() -> None:
    weights = stem_weights([stems("store returns"), stems("store leaderboard")])
    assert weights["store"] < weights["retur"]


def test_an_agent_more_like_the_message_scores_higher_on_every_similarity_feature() -> None:
    agents = [_agent("returns_digest", [[1.0, 0.0]]), _agent("staff_leaderboard", [[0.0, 1.0]])]
    weights = stem_weights([agent.stems for agent in agents])
    rows = pair_features(
        np.asarray([0.9, 0.1]), stems("what was returned"), agents, {}, weights, [False, False]
    )
    assert rows.shape == (2, len(FEATURES))
    for feature in ("similarity", "spec_similarity", "margin", "lexical", "lexical_margin"):
        column = FEATURES.index(feature)
        assert rows[0, column] > rows[1, column], feature


def test_the_domain_verdict_counts_for_a_pack_s_agent_only() -> None:
    agents = [_agent("master_agent", [[1.0, 0.0]], pack=True), _agent("own", [[1.0, 0.0]])]
    rows = pair_features(
        np.asarray([1.0, 0.0]), frozenset(), agents, {"retail": 0.8, "other": 0.2}, {}, [False, True]
    )
    column = FEATURES.index("pack_domain")
    assert rows[0, column] == 1.0 and rows[1, column] == 0.0
    assert rows[1, FEATURES.index("named")] == 1.0


def test_a_message_left_out_of_its_agent_s_examples_is_not_matched_to_itself() -> None:
    agent = AgentTexts(
        name="master_agent",
        pack=True,
        domain="retail",
        spec=np.asarray([[0.0, 1.0]]),
        examples=np.asarray([[1.0, 0.0]]),
        stems=frozenset(),
    )
    query = np.asarray([1.0, 0.0])
    kept = pair_features(query, frozenset(), [agent], {}, {}, [False])
    skipped = pair_features(query, frozenset(), [agent], {}, {}, [False], skip_examples=[np.array([True])])
    column = FEATURES.index("similarity")
    assert kept[0, column] == 1.0 and skipped[0, column] == 0.0


def _served_and_refused(refused: list[list[float]]) -> AgentTexts:
    return AgentTexts(
        name="loan_sales_assistant",
        pack=True,
        domain="lending",
        spec=np.asarray([[1.0, 0.0, 0.0]]),
        examples=np.zeros((0, 3)),
        stems=frozenset(),
        refused=np.asarray(refused, dtype=np.float64).reshape(len(refused), 3),
    )


def test_a_message_nearer_what_the_tenant_refused_than_what_its_agent_serves_has_a_negative_margin() -> None:
    agent = _served_and_refused([[0.0, 1.0, 0.0]])
    near_refused = pair_features(np.asarray([0.3, 0.95, 0.0]), frozenset(), [agent], {}, {}, [False])
    near_served = pair_features(np.asarray([0.95, 0.3, 0.0]), frozenset(), [agent], {}, {}, [False])
    for feature in ("refused_margin", "served_margin"):
        column = FEATURES.index(feature)
        assert near_refused[0, column] < 0 < near_served[0, column], feature
    column = FEATURES.index("refused_similarity")
    assert near_refused[0, column] > near_served[0, column]


def test_without_refused_messages_the_refused_features_say_nothing() -> None:
    rows = pair_features(np.asarray([0.0, 1.0, 0.0]), frozenset(), [_served_and_refused([])], {}, {}, [False])
    for feature in ("refused_similarity", "refused_margin", "served_margin"):
        assert rows[0, FEATURES.index(feature)] == 0.0, feature


def test_a_refused_training_message_left_out_is_not_matched_to_itself() -> None:
    agent = _served_and_refused([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    query = np.asarray([0.0, 1.0, 0.0])
    kept = pair_features(query, frozenset(), [agent], {}, {}, [False])
    skipped = pair_features(
        query, frozenset(), [agent], {}, {}, [False], skip_refused=[np.array([True, False])]
    )
    column = FEATURES.index("refused_similarity")
    assert kept[0, column] > 0.0 and skipped[0, column] == 0.0
