"""The privacy profile is an input of detection: ``minimal`` emits listed units and secrets only, ``strict`` adds
NER's organisations, and a result detected under one profile is never served from the cache under another."""

from __future__ import annotations

from gateway.state.sessions import MemorySessionStore
from privacy.detect import Target
from privacy.factory import build_detector, build_privacy_protector
from privacy.settings import LayerSettings, PrivacySettings

TEXT = "Mail maria.gonzalez@acme-mail.com the key AKIAIOSFODNN7EXAMPLE today."


def _types(profile: str, text: str = TEXT) -> set[str]:
    detector = build_detector(PrivacySettings(layers=LayerSettings(ner=False)))
    return {f.type for f in detector.detect([Target(text)], None, scope="", profile=profile)[0]}


def test_minimal_emits_secrets_alone_and_balanced_the_patterns_too():
    assert _types("minimal") == {"AWS_ACCESS_KEY"}
    assert _types("balanced") == {"AWS_ACCESS_KEY", "EMAIL_ADDRESS"}


async def test_the_detection_caches_key_on_the_profile():
    settings = PrivacySettings(layers=LayerSettings(ner=False), last_check=False)
    protector = build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore())
    body = {"model": "m", "messages": [{"role": "user", "content": TEXT}]}
    minimal = await protector.scrub(body, session_id="s", profile="minimal")
    balanced = await protector.scrub(body, session_id="s", profile="balanced")
    other = await protector.scrub(body, session_id="t", profile="balanced")
    assert "maria.gonzalez@acme-mail.com" in minimal.body["messages"][0]["content"]
    for result in (balanced, other):
        assert "maria.gonzalez@acme-mail.com" not in result.body["messages"][0]["content"]


async def test_a_tool_definition_is_read_for_secrets_and_listed_units_alone():
    """A tool's docs are the agent's own prose: balanced's real-text families read its usage notes as people and
    handles, and the vault's values then replaced `name` keys and tool names across the body (Claude Code's and
    Codex's tools reached the cloud without a function name). A secret in them is still found; the user's text is
    read under the profile."""
    settings = PrivacySettings(layers=LayerSettings(ner=False))
    protector = build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore())
    doc = "Write a bare `@name` only for a real login; ask my son Leo first. Token AKIAIOSFODNN7EXAMPLE."
    tool = {"type": "function", "function": {"name": "Bash", "description": doc, "parameters": {
        "type": "object", "properties": {"name": {"type": "string", "description": "the file's name"}}}}}
    body = {"model": "m", "messages": [{"role": "user", "content": "please ask my son Leo"}],
            "tools": [tool]}
    sent = (await protector.scrub(body, session_id="s", profile="balanced")).body
    function = sent["tools"][0]["function"]
    assert function["name"] == "Bash" and list(function["parameters"]["properties"]) == ["name"]
    assert "`@name`" in function["description"] and "my son Leo" in function["description"]
    assert "AKIAIOSFODNN7EXAMPLE" not in function["description"]
    assert "Leo" not in sent["messages"][0]["content"]
