import uuid
import pytest
from langgraph.types import Command
from tests.test_assistant_verbs import _chat, _seeded, assistant  # noqa: F401
from master_agent.domains.assistant.demo import sent_envelopes


@pytest.mark.parametrize("text", [
    "respond to the last email from Omar: agreed, let's ship on Monday",
    "get back to Priya on her offsite mail - I can't make it, sorry",
    "hit reply on John's payment adapter mail and say mock the vendor",
])
async def test_try(assistant, text):
    tenant, endpoints = await _seeded(assistant, "try")
    thread = str(uuid.uuid4())
    first = await _chat(assistant, tenant, thread, text)
    print("\nUSER:", text)
    print("REPLY1:", first.get("reply"), first.get("interrupts"))
    if first.get("interrupts"):
        done = await _chat(assistant, tenant, thread, Command(resume="yes send it"))
        print("REPLY2:", done.get("reply"))
    print("SENT:", [e.get("rcpt_tos") for e in sent_envelopes(assistant.settings.data_dir) if e.get("mail_from") == endpoints.address])
