"""A test corpus of agent payloads, English and Chinese: (body, sensitive values with weights, strings to keep).

Values are synthetic. ``sensitive``: the values that must not reach the cloud (as listed units they are registered;
for the detection-only measurement they are not). ``keep``: strings the agent needs that must survive.
"""

from __future__ import annotations

import json
from typing import Any

Case = dict[str, Any]


def _tool(content: str, name: str = "read_file") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "c1", "name": name, "content": content}


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


CASES: list[Case] = [
    {"id": "en-crm-json", "messages": [
        {"role": "system", "content": "You are a support agent. Workspace: /home/agent/ws/tickets."},
        {"role": "user", "content": "Follow up ticket SUP-20931 for our customer."},
        _call("crm_get", {"ticket": "SUP-20931"}),
        _tool(json.dumps({"customer": {"name": "Jonathan Pryce", "email": "j.pryce@northwind-mail.com",
                                       "phone": "+1 (646) 555-0199", "city": "Portland"},
                          "ticket": "SUP-20931", "url": "http://localhost:8090/tickets/SUP-20931"}), "crm_get")],
     "sensitive": [("Jonathan Pryce", 3), ("j.pryce@northwind-mail.com", 2), ("+1 (646) 555-0199", 2)],
     "keep": ["SUP-20931", "/home/agent/ws/tickets", "http://localhost:8090/tickets/SUP-20931", "crm_get"]},
    {"id": "en-email-thread", "messages": [
        {"role": "user", "content": "Summarise this email and draft a reply."},
        _tool("From: Rebecca Lindqvist <rebecca.lindqvist@fjordbank.no>\nTo: ops@acme.io\nSubject: Wire transfer\n\n"
              "Hi team, please send the refund to IBAN NO93 8601 1117 947. You can reach me on +47 912 34 567.\n"
              "Best, Rebecca", "read_email")],
     "sensitive": [("rebecca.lindqvist@fjordbank.no", 2), ("NO93 8601 1117 947", 3), ("+47 912 34 567", 2),
                   ("Rebecca Lindqvist", 2)],
     "keep": ["read_email", "Wire transfer"]},
    {"id": "en-env-file", "messages": [
        {"role": "user", "content": "Why does the deploy fail? See .env"},
        _call("read_file", {"path": "/srv/app/.env"}),
        _tool("APP_ENV=production\nDATABASE_URL=postgresql://svc:Vq7!rT9zLm@10.4.2.17:5432/orders\n"
              "AWS_ACCESS_KEY_ID=AKIAZ7QW3ERT5YUI8OPL\nAWS_SECRET_ACCESS_KEY=9fK2mZ/qW8xR4tY7uI1oP3aS5dF6gH0jK9lZ2xC4\n"
              "STRIPE_KEY=sk_live_51HqLyjWDarjtT1zdp7dcXYZ\nSENTRY_DSN_PATH=/var/log/sentry\nLOG_LEVEL=debug\n")],
     "sensitive": [("Vq7!rT9zLm", 3), ("AKIAZ7QW3ERT5YUI8OPL", 3), ("9fK2mZ/qW8xR4tY7uI1oP3aS5dF6gH0jK9lZ2xC4", 3),
                   ("sk_live_51HqLyjWDarjtT1zdp7dcXYZ", 3)],
     "keep": ["/srv/app/.env", "APP_ENV=production", "LOG_LEVEL=debug", "/var/log/sentry", "read_file"]},
    {"id": "en-csv", "messages": [
        {"role": "user", "content": "Count customers per state in customers.csv"},
        _tool("id,name,email,phone,state\n1001,Aaron Whitfield,aaron.w@example.net,312-555-0147,IL\n"
              "1002,Priya Raman,priya.raman@example.net,(408) 555-0112,CA\n1003,Lucas Ferreira,lucas.f@example.net,"
              "617.555.0178,MA\n")],
     "sensitive": [("Aaron Whitfield", 2), ("aaron.w@example.net", 1), ("312-555-0147", 1), ("Priya Raman", 2),
                   ("priya.raman@example.net", 1), ("(408) 555-0112", 1), ("Lucas Ferreira", 2),
                   ("lucas.f@example.net", 1), ("617.555.0178", 1)],
     "keep": ["customers.csv", "id,name,email,phone,state", "1001", "1002"]},
    {"id": "en-same-phone-three-ways", "messages": [
        {"role": "system", "content": "USER.md: The user is Daniel Okafor; mobile 415-555-0163; SSN 219-09-9999."},
        {"role": "user", "content": "Update my contact card: phone (415) 555-0163, also written +1 415 555 0163."}],
     "sensitive": [("Daniel Okafor", 3), ("415-555-0163", 2), ("(415) 555-0163", 2), ("+1 415 555 0163", 2),
                   ("219-09-9999", 3)],
     "keep": ["USER.md"]},
    {"id": "en-escaped-json", "messages": [
        {"role": "user", "content": "Parse the webhook payload."},
        _tool(json.dumps({"payload": json.dumps({"card": "4242 4242 4242 4242", "holder": "Sofia Marquez",
                                                 "ip": "203.0.113.45"})}))],
     "sensitive": [("4242 4242 4242 4242", 3), ("Sofia Marquez", 2), ("203.0.113.45", 1)],
     "keep": ["payload"]},
    {"id": "en-code", "messages": [
        {"role": "user", "content": "Fix the failing test in src/billing/invoice.py (commit 9c1e4b7a2d)."},
        _tool("def total(items):\n    return sum(i.price for i in items)\n\n# owner: Greta Holm\n"
              "TOKEN = 'ghp_R8sT2vX5yZ9aB3cD6eF1gH4iJ7kL0mN2oP5q'\n")],
     "sensitive": [("ghp_R8sT2vX5yZ9aB3cD6eF1gH4iJ7kL0mN2oP5q", 3), ("Greta Holm", 1)],
     "keep": ["src/billing/invoice.py", "9c1e4b7a2d", "def total(items):", "return sum(i.price for i in items)"]},
    {"id": "en-uuid-paths", "messages": [
        {"role": "user", "content": "Restart job 3fa85f64-5717-4562-b3fc-2c963f66afa6 on http://127.0.0.1:9200 "
                                    "and tail /var/log/jobs/worker-7.log; branch feature/PAY-311."}],
     "sensitive": [],
     "keep": ["3fa85f64-5717-4562-b3fc-2c963f66afa6", "http://127.0.0.1:9200", "/var/log/jobs/worker-7.log",
              "feature/PAY-311"]},
    {"id": "zh-crm", "messages": [
        {"role": "system", "content": "你是客服助手。工作目录 /data/agent/ws。"},
        {"role": "user", "content": "帮我查一下工单 TK-88231 的客户信息"},
        _tool(json.dumps({"姓名": "王小明", "手机": "139 1234 5678", "身份证": "11010519491231002X",
                          "地址": "北京市海淀区中关村大街27号", "工单": "TK-88231"}, ensure_ascii=False))],
     "sensitive": [("139 1234 5678", 2), ("11010519491231002X", 3), ("北京市海淀区中关村大街27号", 2)],
     "listed_only": [("王小明", 3)],
     "keep": ["TK-88231", "/data/agent/ws"]},
    {"id": "zh-email", "messages": [
        {"role": "user", "content": "整理这封邮件的要点"},
        _tool("发件人：李娜 <lina.hr@huaxin-corp.cn>\n联系人：李娜\n电话：021-64381234，手机 186-0213-4455\n"
              "请将工资打到银行卡号：6222 0202 0012 3456 789，护照号码 E98765432。", "read_email")],
     "sensitive": [("lina.hr@huaxin-corp.cn", 2), ("李娜", 2), ("021-64381234", 1), ("186-0213-4455", 2),
                   ("6222 0202 0012 3456 789", 3), ("E98765432", 3)],
     "keep": ["read_email"]},
    {"id": "zh-args", "messages": [
        {"role": "user", "content": "给张伟发短信提醒他明天开会"},
        _call("send_sms", {"phone": "13712345678", "name": "张伟", "text": "明天上午10点会议室A开会"})],
     "sensitive": [("13712345678", 2)],
     "listed_only": [("张伟", 2)],
     "keep": ["send_sms", "明天上午10点会议室A开会"]},
    {"id": "zh-env", "messages": [
        {"role": "user", "content": "检查配置文件 config/prod.yaml"},
        _tool("database:\n  host: 10.0.8.21\n  password: Zh@ngP4ss2024\naliyun:\n  access_key_id: LTAI5tQz8xY2wV7uK3mN9pR1\n"
              "  log_dir: /var/log/app\n")],
     "sensitive": [("Zh@ngP4ss2024", 3), ("LTAI5tQz8xY2wV7uK3mN9pR1", 3), ("10.0.8.21", 1)],
     "keep": ["config/prod.yaml", "/var/log/app", "log_dir"]},
]


def units_for(case: Case) -> dict[str, Any]:
    values = list(case["sensitive"]) + list(case.get("listed_only", []))
    return {"items": [{"entity_id": f"{case['id']}-{i}", "name": "item", "sensitive_fields": [
        {"field": "value", "value": value, "dimension": "corpus", "weight": weight}]}
        for i, (value, weight) in enumerate(values)]}
