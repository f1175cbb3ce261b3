"""A seeded held-out corpus of OpenClaw-style mid-trajectory requests.

Each case is one chat-completions body as an agent sends it in the middle of a task: a long system prompt with the
agent's tools, the user's request (English or Chinese), assistant turns with tool calls, and tool results in JSON,
CSV, env, YAML and log formats that carry private values. Every value is annotated (``Value``); the strings the
agent needs to go on (code, its own tool-call ids and tool names, file paths, ordinary numbers) are listed as
``needed``. Same seed, same corpus; the figures in docs/privacy.md come from seeds the detectors were never tuned on.
"""

from __future__ import annotations

import dataclasses
import json
import random
import string
from dataclasses import dataclass, field
from typing import Any

from benchmarks.recall.values import GENERATORS, Value, listed_only_value

TOOLS = ["read", "write", "edit", "exec", "web_fetch", "memory_search", "sessions_send"]
_SYSTEM = ("You are a personal assistant running inside OpenClaw.\n## Tooling\nTool names are case-sensitive. "
           "Call tools exactly as listed.\n" + "\n".join(f"- {t}: {t.replace('_', ' ')} files and commands"
                                                        for t in TOOLS) +
           "\n## Workspace\nYour working directory is: /home/node/.openclaw/workspace\n"
           "Treat this directory as the single global workspace for file operations.\n")


@dataclass
class Case:
    id: str
    zh: bool
    body: dict[str, Any]
    values: list[Value] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)


def _call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))


def tool_call(rng: random.Random, path: str) -> tuple[str, dict[str, Any]]:
    """The agent's next tool call (``read`` or ``exec`` on ``path``) as an assistant message, with its id."""
    call_id = _call_id(rng)
    tool = rng.choice(["read", "exec"])
    arguments = {"path": path} if tool == "read" else {"command": f"python {path} --limit 50"}
    return call_id, {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}]}


def _needed(rng: random.Random) -> list[str]:
    module = rng.choice(["billing", "ingest", "report", "sync", "auth_client"])
    return [
        f"/home/node/.openclaw/workspace/{module}/{rng.choice(['main', 'utils', 'models'])}.py",
        f"def {module}_{rng.choice(['load', 'apply', 'run'])}(rows, limit={rng.randint(10, 500)}):",
        f"{rng.randint(1_000_000, 9_999_999)} bytes",
        f"took {rng.randint(100, 99_999)} ms",
        f"v{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "".join(rng.choice("0123456789abcdef") for _ in range(12)),  # a commit hash
        f"port {rng.choice([5432, 6379, 8080, 3000, 9200])}",
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:14:07Z",
        f"order #{rng.randint(10_000, 99_999)}",
        f"{rng.randint(1000, 99999)} rows",
        f"ts={rng.randint(1_700_000_000_000, 1_800_000_000_000)}",  # epoch milliseconds
        "-".join("".join(rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12)),  # a uuid
        f"build {rng.randint(10_000_000, 99_999_999)}",
        f"+{rng.randint(1, 60)} lines",
    ]


def _key(value: Value, zh: bool) -> str:
    return value.label_zh if zh and random.Random(value.text).random() < 0.5 else value.field


def _json_result(values: list[Value], zh: bool, needed: list[str]) -> str:
    record: dict[str, Any] = {"id": len(values), "status": "active", "source_file": needed[0],
                              "trace_id": needed[11], "note": f"{needed[12]}, {needed[13]}"}
    for v in values:
        record[_key(v, zh)] = v.text
    return json.dumps({"records": [record], "elapsed": needed[3]}, ensure_ascii=False, indent=2)


def _csv_result(values: list[Value], zh: bool, needed: list[str]) -> str:
    header = ["row"] + [_key(v, zh) for v in values]
    row = ["1"] + [('"' + v.text + '"') if "," in v.text or "\n" in v.text else v.text for v in values]
    return f"# {needed[9]} exported to {needed[0]}\n" + ",".join(header) + "\n" + ",".join(row)


def _env_result(values: list[Value], zh: bool, needed: list[str]) -> str:
    lines = [f"# generated {needed[7]}, listens on {needed[6]}", f"APP_PORT={needed[6].split()[-1]}"]
    for v in values:
        name = v.label_en.upper().replace(" ", "_").replace("'", "").replace(".", "") if v.label_en.isascii() else v.field.upper()
        text = json.dumps(v.text) if "\n" in v.text else v.text
        lines.append(f"{name}={text}")
    return "\n".join(lines)


def _yaml_result(values: list[Value], zh: bool, needed: list[str]) -> str:
    lines = ["service:", f"  version: {needed[4]}", f"  entry: {needed[0]}", f"  trace: {needed[11]}",
             f"  # {needed[13]} since {needed[12]}", "  settings:"]
    for v in values:
        text = json.dumps(v.text, ensure_ascii=False) if ("\n" in v.text or ":" in v.text) else v.text
        lines.append(f"    {_key(v, zh)}: {text}")
    return "\n".join(lines)


def _log_result(values: list[Value], zh: bool, needed: list[str]) -> str:
    lines = []
    for i, v in enumerate(values):
        label = v.label_zh if zh else v.label_en
        lines.append(f"{needed[7]} INFO worker-{i} {label}: {v.text} ({needed[3]})")
    lines.append(f"{needed[7]} DEBUG commit {needed[5]} {needed[2]} {needed[10]} {needed[12]}")
    return "\n".join(lines)


def _prose(values: list[Value], zh: bool, needed: list[str]) -> str:
    if zh:
        items = "；".join(f"{v.label_zh}是{v.text}" for v in values)
        return f"请帮我核对客户资料：{items}。然后把结果写到 {needed[0]}，{needed[8]} 也要更新。"
    items = "; ".join(f"the {v.label_en} is {v.text}" for v in values)
    return f"Please check the customer's file: {items}. Then write the summary to {needed[0]} and update {needed[8]}."


_RENDERERS = [_json_result, _csv_result, _env_result, _yaml_result, _log_result]


# ``hard``: labels and phrasings the detectors were not written for, and surface forms (upper case, a value
# wrapped across a line, other separators). Written once, measured on held-out seeds, never tuned on.
_ALT: dict[str, tuple[str, str, str]] = {
    "passport": ("travel doc number", "passport_num", "护照编号"), "mrz": ("machine readable line", "mrz_line", "机读区"),
    "drivers_license": ("DL#", "licence_no", "驾驶执照号"), "ni_number": ("NINO", "nat_ins_no", "国民保险编号"),
    "a_number": ("USCIS #", "alien_no", "移民编号"), "mrn": ("patient record", "medical_record_no", "病案号"),
    "id_card": ("resident ID", "citizen_id", "居民身份证"), "full_name": ("holder", "person", "名称"),
    "iban": ("IBAN number", "iban_no", "IBAN号码"), "routing_number": ("ABA #", "aba_routing", "汇款路线号"),
    "card_number": ("PAN", "cc_number", "信用卡号"), "sort_code": ("bank sort code", "sortcode", "英国银行代码"),
    "salary": ("gross pay", "comp_total", "薪酬"), "annual_salary": ("gross pay", "comp_total", "薪酬"),
    "balance": ("available funds", "funds", "可用资金"), "alipay": ("Alipay ID", "alipay_id", "支付宝ID"),
    "password": ("pass phrase", "login_secret", "登录密码"), "connection_string": ("DSN", "db_dsn", "连接串"),
    "private_key": ("ssh key", "deploy_key", "部署密钥"), "phone": ("reach me at", "contact_no", "联络号码"),
    "email": ("e-mail", "mail_to", "电邮"), "address": ("residence", "home_addr", "居所"),
}


def _harder(rng: random.Random, value: Value) -> Value:
    label_en, field_name, label_zh = _ALT.get(value.field, ("ref no", "acct_ref", "参考号"))
    if value.family == "credentials" and value.field not in _ALT:
        label_en, field_name, label_zh = ("auth", "service_credential", "凭证")
    text = value.text
    form = rng.random()
    if value.family != "credentials" and "\n" not in text:
        if form < 0.25:
            text = text.upper()
        elif form < 0.45 and len(text) >= 12:
            text = text[:len(text) // 2] + "\n" + text[len(text) // 2:]  # wrapped across a line
        elif form < 0.65 and any(ch in text for ch in " -"):
            text = text.replace(" ", ".").replace("-", "/")
    return dataclasses.replace(value, text=text, field=field_name, label_en=label_en, label_zh=label_zh)


def make_case(seed: int, index: int, hard: bool = False) -> Case:
    rng = random.Random(seed * 100_003 + index)
    zh = rng.random() < 0.4
    case = Case(id=f"s{seed}-{index}", zh=zh, body={})
    needed = _needed(rng)
    case.needed = needed + [TOOLS[0], TOOLS[3]]
    messages: list[dict[str, Any]] = [{"role": "system", "content": _SYSTEM}]
    prose_values = [rng.choice(GENERATORS)(rng) for _ in range(2)]
    if hard:
        prose_values = [_harder(rng, v) for v in prose_values]
    prose_values = [v for v in prose_values if "\n" not in v.text]
    messages.append({"role": "user", "content": _prose(prose_values, zh, needed)})
    case.values += prose_values
    for turn in range(rng.randint(2, 4)):
        call_id, call = tool_call(rng, needed[0])
        case.needed.append(call_id)
        messages.append(call)
        values = [rng.choice(GENERATORS)(rng) for _ in range(rng.randint(3, 6))]
        if hard:
            values = [_harder(rng, v) for v in values]
        if rng.random() < 0.3:
            values.append(listed_only_value(rng))
        render = _RENDERERS[(index + turn) % len(_RENDERERS)]
        messages.append({"role": "tool", "tool_call_id": call_id, "content": render(values, zh, needed)})
        case.values += values
    return finish(case, messages, needed)


def finish(case: Case, messages: list[dict[str, Any]], needed: list[str]) -> Case:
    """The case's body: the trajectory so far, the agent's closing turn and its tools; ``needed`` keeps only the
    strings this case's renderers wrote."""
    messages.append({"role": "assistant", "content": f"I ran `{needed[1]}` ({needed[4]}, commit {needed[5]})."})
    case.body = {"model": "ecgw/cloud-only", "messages": messages,
                 "tools": [{"type": "function", "function": {"name": t, "description": f"{t} tool",
                                                             "parameters": {"type": "object", "properties": {}}}}
                           for t in TOOLS]}
    sent = json.dumps(case.body, ensure_ascii=False)
    case.needed = [n for n in case.needed if n in sent]
    return case


def corpus(seed: int, cases: int = 60, hard: bool = False) -> list[Case]:
    return [make_case(seed, i, hard) for i in range(cases)]


def units_document(case: Case) -> dict[str, Any]:
    """The case's values as a ``sensitive_items.json`` document (one entity per value)."""
    return {"items": [{"entity_id": f"v{i}", "name": v.field, "sensitive_fields": [
        {"field": v.field, "value": v.text, "dimension": v.family, "weight": v.weight}]}
        for i, v in enumerate(case.values)]}
