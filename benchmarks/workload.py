"""Realistic agent requests: a ~20 KB system prompt with workspace files about the user, and a history that
grows by one tool round per step (the shape OpenClaw-style agents send). Synthetic, deterministic data."""

from __future__ import annotations

import json
import random
from typing import Any

FIRST = ["Alice", "Bob", "Chen", "Dana", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Wei", "Li Na"]
LAST = ["Martin", "Okafor", "Zhang", "Kowalski", "Yilmaz", "Haddad", "Lee", "Tanaka", "Garcia", "Berg"]
TOOLS = [{"type": "function", "function": {"name": name, "description": f"{name} a file or run a command",
                                           "parameters": {"type": "object", "properties": {
                                               "path": {"type": "string"}, "command": {"type": "string"}}}}}
         for name in ("read", "write", "edit", "exec", "ls")]


def _person(rng: random.Random, i: int) -> dict[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return {"id": f"CUST-{1000 + i}", "name": f"{first} {last}",
            "email": f"{first.lower().replace(' ', '.')}.{last.lower()}{i}@example.com",
            "phone": f"+1 415-555-{rng.randint(1000, 9999)}", "city": rng.choice(["Berlin", "Austin", "Shanghai"]),
            "note": f"Renewal due in Q{rng.randint(1, 4)}; prefers email."}


def system_prompt(target_bytes: int = 20_000, seed: int = 7) -> str:
    rng = random.Random(seed)
    parts = ["You are a coding and office agent working in /workspace. Use the tools to read and change files.",
             "## AGENTS.md\nFollow the user's instructions. Never push to main. Tests: `make test`.",
             "## USER.md\nThe user is Maria Gonzalez (maria.gonzalez@acme-corp.example, +1 650-555-0142), "
             "account manager at Acme Corp, Berlin office. API key for the CRM: sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c."]
    i = 0
    while sum(len(p) for p in parts) < target_bytes:
        row = _person(rng, i)
        parts.append(f"- {row['id']} {row['name']} <{row['email']}> {row['phone']} ({row['city']}): {row['note']}")
        i += 1
    return "\n".join(parts)


def trajectory(steps: int = 40, seed: int = 11) -> list[dict[str, Any]]:
    """The request body of each step: the same prefix plus one more assistant tool call and tool result."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": "Update the CRM notes for every customer in Berlin and email me a summary."}]
    bodies = []
    for step in range(steps):
        bodies.append({"model": "bench", "messages": [dict(m) for m in messages], "tools": TOOLS})
        person = _person(rng, 500 + step)
        call_id = f"call_{step}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": call_id, "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"path": f"crm/{person['id']}.json"})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(person)})
    return bodies


def small_request(stream: bool = False) -> dict[str, Any]:
    return {"model": "bench", "stream": stream, "max_tokens": 16,
            "messages": [{"role": "user", "content": "What is the answer?"}]}
