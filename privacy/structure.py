"""Which places of a chat-completions body are its structure rather than its content: JSON object keys, the names of
tools and of the functions called, the fields the wire format reads as structure (``role``, ``type``, ids, …) and a
schema's own strings. The walk never scrubs them (``privacy.walk``) and the last check never rewrites them
(``privacy.lastcheck.place``): a placeholder there breaks the request a provider validates, or the tool call an agent
matches to its tool."""

from __future__ import annotations

# String values that are structure, not content: they must reach the provider as they are.
STRUCTURAL_KEYS = frozenset({"model", "role", "type", "id", "tool_call_id", "tool_choice", "reasoning_effort",
                             "service_tier", "object", "finish_reason", "format", "detail"})
# A ``name`` in an object under one of these keys is a function's name (a tool's, or the one a call calls).
FUNCTION_KEYS = frozenset({"function", "function_call", "functions"})
# Top-level keys whose value is a schema (tools and what picks one, the answer's format): every string in it but
# its docs is structure — names, types, ``required`` and ``enum`` items.
SCHEMAS = frozenset({"tools", "functions", "tool_choice", "response_format"})
SCHEMA_DOCS = frozenset({"description", "title"})
