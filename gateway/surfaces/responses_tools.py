"""How a Responses request's tools become chat functions, and how to tell the calls apart on the way back.

Tools: ``function`` tools as they are; ``custom`` (freeform) tools as a function with one string argument
``input`` (the call comes back as a ``custom_tool_call``); ``local_shell`` as a function ``local_shell``;
``namespace`` tools flattened into their functions (``namespace__name``; Codex's ``functions`` namespace, the
implicit one of plain function tools, keeps plain names); hosted tools (``web_search``,
``file_search``, ``computer_use``, ``code_interpreter``, ``image_generation``, ``mcp``) are left out, since no
upstream here can run them, and named in ``ToolMap.dropped_tools``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.http.errors import bad

NAMESPACE_SEPARATOR = "__"
DEFAULT_NAMESPACE = "functions"
LOCAL_SHELL = "local_shell"
_LOCAL_SHELL_PARAMETERS = {
    "type": "object",
    "properties": {"command": {"type": "array", "items": {"type": "string"}},
                   "workdir": {"type": "string"}, "timeout_ms": {"type": "integer"}},
    "required": ["command"],
}


@dataclass
class ToolMap:
    """What rendering the model's calls needs: which chat functions stand for freeform tools, for the local shell,
    or for a namespaced tool; and which hosted tools were left out."""

    custom_tools: set[str] = field(default_factory=set)
    local_shell: bool = False
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)  # chat name → (namespace, name)
    dropped_tools: list[str] = field(default_factory=list)


def chat_name(namespace: Any, name: str) -> str:
    """The flat function name a namespaced tool travels under."""
    if not isinstance(namespace, str) or namespace in ("", DEFAULT_NAMESPACE):
        return name
    return f"{namespace}{NAMESPACE_SEPARATOR}{name}"


def chat_tools(value: Any, items: list[dict[str, Any]], tools: ToolMap) -> list[dict[str, Any]]:
    """Chat tools from ``tools`` and from Codex's ``additional_tools`` input items (which are not messages)."""
    if value is not None and not isinstance(value, list):
        raise bad("'tools' must be a list of tool definitions.", "tools")
    declared = [(f"tools[{i}]", tool) for i, tool in enumerate(value or ())]
    for item in items:
        if item.get("type") == "additional_tools":
            declared += [(f"additional_tools.tools[{j}]", tool) for j, tool in enumerate(item.get("tools") or ())]
    out: list[dict[str, Any]] = []
    for where, tool in declared:
        _tool(tool, where, None, out, tools)
    return out


def _tool(tool: Any, where: str, namespace: str | None, out: list[dict[str, Any]], tools: ToolMap) -> None:
    if not isinstance(tool, dict):
        raise bad(f"{where} must be an object with a 'type'.", where)
    kind = tool.get("type")
    name = tool.get("name")
    if kind in ("function", "custom") and (not isinstance(name, str) or not name):
        raise bad(f"{where}.name is required on a {kind} tool.", f"{where}.name")
    name = str(name or "")
    flat = chat_name(namespace, name)
    if kind == "function":
        function: dict[str, Any] = {"name": flat,
                                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
        if isinstance(tool.get("description"), str):
            function["description"] = tool["description"]
        if tool.get("strict") is not None:
            function["strict"] = tool["strict"]
        out.append({"type": "function", "function": function})
    elif kind == "custom":
        description = str(tool.get("description") or "")
        fmt = tool.get("format")
        if isinstance(fmt, dict) and fmt.get("type") == "grammar" and isinstance(fmt.get("definition"), str):
            description += f"\n\nThe input must follow this {fmt.get('syntax', '')} grammar:\n{fmt['definition']}"
        tools.custom_tools.add(flat)
        out.append({"type": "function", "function": {
            "name": flat, "description": description.strip(),
            "parameters": {"type": "object", "properties": {"input": {"type": "string",
                                                                       "description": "The tool's raw input."}},
                           "required": ["input"]}}})
    elif kind == "local_shell":
        tools.local_shell = True
        out.append({"type": "function", "function": {"name": LOCAL_SHELL, "description": "Run a shell command.",
                                                     "parameters": _LOCAL_SHELL_PARAMETERS}})
    elif kind == "namespace":
        space = name or None
        for j, inner in enumerate(tool.get("tools") or ()):
            _tool(inner, f"{where}.tools[{j}]", space, out, tools)
    else:
        tools.dropped_tools.append(str(kind))
        return
    if kind in ("function", "custom") and flat != name:
        tools.namespaced[flat] = (str(namespace), name)


def chat_tool_choice(choice: Any) -> Any:
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict):
        kind = choice.get("type")
        if kind in ("function", "custom") and isinstance(choice.get("name"), str):
            return {"type": "function", "function": {"name": choice["name"]}}
        if kind == "allowed_tools":
            return choice.get("mode") if choice.get("mode") in ("auto", "required") else "auto"
        return "auto"  # a hosted tool the upstream cannot run: let the model choose among the others
    raise bad("'tool_choice' must be 'auto', 'none', 'required' or an object naming a tool.", "tool_choice")
