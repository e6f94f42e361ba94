"""Intent analysis by a real model: structured output at temperature 0 through the real openai client,
against recorded OpenAI-format responses; the offline classifier answers when the model cannot. The
offline classifier: the trained intent head with the exemplar classifier."""

from __future__ import annotations

from dataclasses import replace

import pytest

from master_agent.models.embeddings import HashingEmbedder, LocalMiniLMEmbedder
from master_agent.routing.exemplars import GENERIC_EXEMPLARS
from master_agent.routing.intent import ExemplarClassifier, ModelIntentAnalyzer, message_vector
from master_agent.routing.intent_head import (
    AGENT_TOKEN,
    REFUSED,
    Features,
    HeadClassifier,
    agents_masked,
    load_head,
    split_label,
)
from master_agent.routing.models import IntentAnalysis
from master_agent.settings import Settings
from tests.model_exchanges import Script, load_recordings

RECORDED = load_recordings("intent_analysis")


def analyzer(settings: Settings, script: Script) -> ModelIntentAnalyzer:
    model = script.chat_model(settings)
    return ModelIntentAnalyzer(model, ExemplarClassifier(HashingEmbedder(), GENERIC_EXEMPLARS))


async def test_the_model_is_asked_for_an_intent_analysis_at_temperature_zero(settings: Settings) -> None:
    script = Script(["intent_create_agent"], recorded=RECORDED)
    intent = await analyzer(settings, script).analyze(
        "Build me an agent that reports the weekly refund rate per store", ["list my agents"]
    )
    assert intent.action == "CREATE" and intent.confidence == pytest.approx(0.93)
    assert intent.required_skills == ["sql reporting"] and intent.domain == "retail"
    (request,) = script.requests
    assert request["temperature"] == 0
    assert [tool["function"]["name"] for tool in request["tools"]] == ["IntentAnalysis"]
    assert request["tool_choice"]["function"]["name"] == "IntentAnalysis"
    assert "list my agents" in request["messages"][0]["content"]  # the conversation, as context


async def test_entities_the_message_states_win_over_the_models(settings: Settings) -> None:
    script = Script(["intent_data_question"], recorded=RECORDED)
    intent = await analyzer(settings, script).analyze("What was Store 3's attach rate last month?", [])
    assert intent.action == "QUERY" and intent.query_kind == "data"
    assert intent.entities["store_id"] == 3 and intent.entities["window"] == "last month"


@pytest.mark.parametrize("step", ["intent_unusable", "server_error"])
async def test_an_unusable_or_failed_model_answer_falls_back_to_the_classifier(
    settings: Settings, step: str
) -> None:
    script = Script([step], recorded=RECORDED)
    intent = await analyzer(settings, script).analyze("Create an agent that summarises complaints weekly", [])
    assert len(script.requests) == 1
    assert intent.action == "CREATE"  # the offline classifier's answer


async def test_the_trained_head_answers_with_its_calibrated_confidence() -> None:
    embedder = LocalMiniLMEmbedder()
    head = load_head()
    assert head is not None and head.embedder == embedder.model_name and head.temperature > 0
    classifier = HeadClassifier(ExemplarClassifier(embedder, GENERIC_EXEMPLARS))
    message = "Which of our stores sold the most last week?"
    intent = await classifier.analyze(message, [])
    shares = head.probabilities(await message_vector(embedder, message), message)
    assert sum(shares.values()) == pytest.approx(1.0)
    label = max(shares, key=lambda name: shares[name])
    assert (intent.action, intent.query_kind) == split_label(label)
    assert intent.confidence == pytest.approx(shares[label], abs=1e-3)
    assert intent.entities == {"window": "last week"}  # entities still read from the message


async def test_a_request_in_so_many_words_to_make_an_agent_is_create_whatever_the_head_says() -> None:
    classifier = HeadClassifier(ExemplarClassifier(LocalMiniLMEmbedder(), GENERIC_EXEMPLARS))
    intent = await classifier.analyze("Create an agent that lists my agents", [])
    assert intent.action == "CREATE" and intent.confidence >= 0.9


async def test_without_a_head_for_the_embedder_the_exemplar_classifier_answers() -> None:
    exemplars = ExemplarClassifier(HashingEmbedder(), GENERIC_EXEMPLARS)
    classifier = HeadClassifier(exemplars)
    assert classifier.head is None  # the shipped head reads MiniLM vectors, not hashed ones
    message = "Show me all my agents please"
    assert await classifier.analyze(message, []) == await exemplars.analyze(message, [])


AGENTS = ("weekly_sales_summary", "returns_digest", "master_agent", "research")


@pytest.mark.parametrize(
    ("message", "read"),
    [
        ("run weekly_sales_summary for week 46", f"run {AGENT_TOKEN} for week 46"),
        ("Kick off RETURNS_DIGEST, stores 1-3", f"Kick off {AGENT_TOKEN}, stores 1-3"),
        # A tool's name and a name no agent of the tenant has are words of the message, as is the new
        # name of a rename.
        ("add estimate_roi to returns_digest", f"add estimate_roi to {AGENT_TOKEN}"),
        ("rename returns_digest to returns_radar", f"rename {AGENT_TOKEN} to returns_radar"),
        (
            "weekly_refund_rate_store_agent pls, weeks 44-47",
            "weekly_refund_rate_store_agent pls, weeks 44-47",
        ),
        # Only whole names: a longer identifier that starts with one is another name.
        ("is returns_digest_v2 live?", "is returns_digest_v2 live?"),
        # A plain-word name is a word of the message ("do some research"), and @name is an override.
        ("do some research on store 3", "do some research on store 3"),
        ("@returns_digest store 2", "@returns_digest store 2"),
    ],
)
def test_a_tenant_s_agent_names_are_masked_whole_and_other_words_kept(message: str, read: str) -> None:
    assert agents_masked(message, AGENTS) == read
    assert Features(mask_agents=True).read(message, AGENTS) == read
    assert Features().read(message, AGENTS) == message  # a head trained on names as said reads them so


async def test_a_head_trained_on_masked_agents_reads_the_tenant_s_names_masked() -> None:
    embedder = LocalMiniLMEmbedder()
    shipped = load_head()
    assert shipped is not None
    masking = replace(shipped, features=replace(shipped.features, mask_agents=True))
    exemplars = ExemplarClassifier(embedder, GENERIC_EXEMPLARS)
    named, masked = "run weekly_sales_summary for week 46", f"run {AGENT_TOKEN} for week 46"
    at_tenant = HeadClassifier(exemplars, masking, agents=AGENTS)
    assert (await at_tenant.analyze(named, [])).confidence == (await at_tenant.analyze(masked, [])).confidence
    # At a tenant without that agent, the name is read as said.
    elsewhere = HeadClassifier(exemplars, masking, agents=("returns_digest",))
    shares = masking.probabilities(await message_vector(embedder, named), named)
    assert (await elsewhere.analyze(named, [])).confidence == pytest.approx(max(shares.values()), abs=1e-3)


MISREAD = "Build me an agent that reports the weekly refund rate per store"


async def test_a_confident_local_classifier_overrules_a_model_that_disagrees(settings: Settings) -> None:
    classifier = ExemplarClassifier(HashingEmbedder(), GENERIC_EXEMPLARS)
    local = await classifier.analyze(MISREAD, [])
    assert local.action == "CREATE"
    script = Script(["intent_misread_create"], recorded=RECORDED)
    judged = ModelIntentAnalyzer(script.chat_model(settings), classifier, overrule_at=local.confidence)
    intent = await judged.analyze(MISREAD, [])
    assert len(script.requests) == 1
    assert intent.action == "CREATE" and intent.confidence == local.confidence
    assert intent.entities["metric"] == "refund rate"  # what the model found is kept
    assert intent.ambiguity_reason is not None and "EXECUTE (0.90)" in intent.ambiguity_reason


async def test_an_unsure_classifier_leaves_the_models_action_with_its_doubt(settings: Settings) -> None:
    classifier = ExemplarClassifier(HashingEmbedder(), GENERIC_EXEMPLARS)
    local = await classifier.analyze(MISREAD, [])
    script = Script(["intent_misread_create"], recorded=RECORDED)
    judged = ModelIntentAnalyzer(script.chat_model(settings), classifier, overrule_at=local.confidence + 0.01)
    intent = await judged.analyze(MISREAD, [])
    assert intent.action == "EXECUTE"
    assert intent.confidence == pytest.approx(min(0.9, 1 - local.confidence))
    assert intent.ambiguity_reason is not None and "local classifier CREATE" in intent.ambiguity_reason


async def test_what_no_tenant_serves_is_refused_outright_when_the_head_is_sure() -> None:
    head = load_head()
    assert head is not None and REFUSED in head.labels and head.refuse_from < 1.0
    classifier = HeadClassifier(ExemplarClassifier(LocalMiniLMEmbedder(), GENERIC_EXEMPLARS))
    weather = await classifier.analyze("what's the weather in Pune today?", [])
    assert weather.action == "EXECUTE" and weather.out_of_scope  # served as an EXECUTE, refused at once
    figure = await classifier.analyze("What was Store 3's attach rate last month?", [])
    assert figure.action == "QUERY" and not figure.out_of_scope


def test_the_refusal_is_never_asked_of_a_model() -> None:
    assert "out_of_scope" not in IntentAnalysis.model_json_schema()["properties"]
