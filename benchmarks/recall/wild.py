"""The ``wild-a`` and ``wild-b`` variants: labels and containers as real systems export them, in two disjoint pools.

Written without reading the detectors' rules, to measure detection on vocabularies no detector author has seen.
Every value kind has, per pool, its own labels (English keys and headers in the styles of CRM exports, FHIR-ish
patient JSON, bank statements, payroll YAML, Kubernetes secrets, env/ini files, logs, e-mails and tickets; Chinese
labels as ERP/HR exports write them); no label is in both pools, even after case and punctuation are dropped. The
pools also render differently (CSV delimiter, JSON envelope, log format, table orientation, e-mail vs ticket,
upper vs lower case). Tune on one pool at most and report the other.

The cases have the original corpus's shape (``corpus.Case``: body, annotated ``Value``s, needed strings) so
``score.Figures`` scores them unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.recall import wild_values as wv
from benchmarks.recall.corpus import _SYSTEM, TOOLS, Case, _needed, finish, tool_call
from benchmarks.recall.values import Value, listed_only_value

POOL_NAMES = ("a", "b")


@dataclass(frozen=True)
class Labels:
    en: tuple[str, ...]
    zh: tuple[str, ...]


@dataclass(frozen=True)
class Kind:
    family: str
    a: Labels
    b: Labels


def _k(family: str, a_en: list[str], a_zh: list[str], b_en: list[str], b_zh: list[str]) -> Kind:
    return Kind(family, Labels(tuple(a_en), tuple(a_zh)), Labels(tuple(b_en), tuple(b_zh)))


KINDS: dict[str, Kind] = {
    # identity
    "ssn": _k("identity", ["SSN", "applicant.ssn", "Social Security #"], ["社会安全号"],
              ["SocialSecurityNumber", "soc_sec_no", "tax_id_us"], ["美国社保号码"]),
    "sin": _k("identity", ["SIN", "sin_number"], ["加拿大社会保险号"], ["Social Insurance No.", "emp.sin"], ["SIN号码"]),
    "nhs": _k("identity", ["NHS No.", "patient.nhsNumber"], ["NHS号"], ["nhs_num", "NHSNumber"], ["英国医保编号"]),
    "aadhaar": _k("identity", ["Aadhaar", "aadhaar_no"], ["阿达哈尔号"], ["UID (Aadhaar)", "uidai_number"], ["印度身份号"]),
    "pan_in": _k("identity", ["PAN", "pan_card"], ["PAN卡号"], ["Income Tax PAN", "permanentAccountNumber"], ["印度税号"]),
    "nric": _k("identity", ["NRIC", "nric_fin"], ["新加坡身份证"], ["NRIC/FIN No.", "sg_ic"], ["NRIC号码"]),
    "hkid": _k("identity", ["HKID", "hkid_no"], ["香港身份证号"], ["HK Identity Card", "hkic"], ["港澳身份证"]),
    "tfn": _k("identity", ["TFN", "tax_file_no"], ["澳洲税号"], ["Tax File Number", "ato_tfn"], ["TFN号码"]),
    "us_licence": _k("identity", ["DL No.", "driverLicenseNumber", "license_id"], ["美国驾照号"],
                     ["Driver Lic #", "dl_num", "operator_license"], ["驾照编号"]),
    "dvla": _k("identity", ["DVLA licence", "dvla_number"], ["英国驾照号"],
               ["UK driving licence no", "licence_number_uk"], ["DVLA编号"]),
    "ni": _k("identity", ["NI No.", "nino"], ["国民保险号码"], ["National Ins. Number", "ni_num"], ["NI号"]),
    "passport": _k("identity", ["PPT", "Passport No.", "passportNumber", "travel_document"], ["护照号"],
                   ["passport_ident", "Pass. #", "doc.passport", "ppt_no"], ["护照证件号", "旅行证件号码"]),
    "mrz": _k("identity", ["MRZ", "mrz_line2"], ["护照机读码"], ["machine_zone", "ICAO line"], ["MRZ码"]),
    "cn_id": _k("identity", ["resident_id"], ["证件号码", "身份证"], ["PRC ID", "sfzh"], ["公民身份号码", "身份证件号"]),
    "mrn": _k("identity", ["patient.mrn", "MRN#", "med_rec"], ["病历编号"],
              ["MedicalRecordNumber", "chart_no", "hosp_num"], ["住院号"]),
    "a_number": _k("identity", ["A#", "alien_reg"], ["移民登记号"], ["USCIS No.", "a_num"], ["外籍登记号"]),
    "person": _k("identity", ["Full Name", "contact_name", "patient.name", "Account Owner"], ["员工姓名", "客户名称"],
                 ["FirstName LastName", "emp_name", "insured", "Cardholder"], ["联系人", "持卡人"]),
    # documents
    "bank_account": _k("documents", ["Acct. No.", "account_num", "DebtorAccount"], ["账户号码", "开户行账号"],
                       ["acct_nbr", "Account #", "beneficiary_acct"], ["银行账户", "收款账号"]),
    "policy": _k("documents", ["PolicyNumber", "policy_ref"], ["保单号码"], ["Pol. No.", "insurance_policy_id"], ["保险单号"]),
    "member": _k("documents", ["member_ident", "Member ID"], ["会员卡号"], ["subscriber_no", "MemberNumber"], ["参保编号"]),
    "claim": _k("documents", ["claimRef", "Claim #"], ["理赔编号"], ["claim_no", "ClaimNumber"], ["报案号"]),
    "tax_ref": _k("documents", ["UTR", "tax_reference"], ["纳税人识别号"], ["TaxpayerID", "tin"], ["个税编号"]),
    "contract": _k("documents", ["contract_no"], ["合同编号"], ["ContractRef"], ["协议号"]),
    # financial
    "iban": _k("financial", ["IBAN", "iban_code"], ["IBAN账号"], ["Int'l Bank Acct", "creditor_iban"], ["国际账号"]),
    "routing": _k("financial", ["Routing #", "aba"], ["路由号"], ["RTN", "routing_transit"], ["美国银行路由"]),
    "sort_code": _k("financial", ["Sort-Code", "sortCode"], ["英国分行代码"], ["Branch Sort No.", "bank_sort"], ["分行排序码"]),
    "bsb_account": _k("financial", ["BSB / Account"], ["澳洲BSB账户"], ["bsb_acct"], ["BSB账号"]),
    "card": _k("financial", ["Card No.", "cc_num", "payment.card.number"], ["信用卡卡号"],
               ["CardNumber", "credit_card", "PAN (full)"], ["银行卡号码"]),
    "cn_bank_card": _k("financial", ["debit_card"], ["银行卡号", "借记卡号"], ["unionpay_card"], ["工资卡号", "储蓄卡号"]),
    "net_pay": _k("financial", ["Net Pay", "net_amount"], ["实发工资"], ["take_home", "NetSalary"], ["实发金额"]),
    "gross_annual": _k("financial", ["gross_annual", "Base Salary"], ["年薪"], ["AnnualComp", "salary_gross_yr"],
                       ["税前年收入"]),
    "balance": _k("financial", ["Closing Balance", "avail_bal"], ["账户余额"], ["ledger_balance", "Balance (EUR)"],
                  ["可用余额"]),
    "alipay": _k("financial", ["alipay_account"], ["支付宝账户"], ["Alipay"], ["支付宝"]),
    # credentials
    "password": _k("credentials", ["db.password", "passwd", "smtp_pass", "Password"], ["口令"],
                   ["pwd", "spring.datasource.password", "requirepass", "admin_pw"], ["初始密码"]),
    "conn_url": _k("credentials", ["DATABASE_URL", "sqlalchemy.url"], ["数据库地址"],
                   ["MONGO_URI", "CELERY_BROKER_URL", "dsn"], ["连接字符串"]),
    "aliyun_id": _k("credentials", ["ALIBABA_CLOUD_ACCESS_KEY_ID", "accessKeyId"], ["阿里云AK"],
                    ["aliyun_ak", "OSS_ACCESS_KEY"], ["阿里云访问密钥ID"]),
    "aliyun_secret": _k("credentials", ["ALIBABA_CLOUD_ACCESS_KEY_SECRET", "accessKeySecret"], ["阿里云SK"],
                        ["aliyun_sk", "OSS_SECRET"], ["阿里云访问密钥"]),
    "tencent_id": _k("credentials", ["TENCENTCLOUD_SECRET_ID"], ["腾讯云SecretId"], ["tc_secret_id", "SecretId"],
                     ["腾讯云密钥ID"]),
    "slack_webhook": _k("credentials", ["SLACK_WEBHOOK", "alerts.slack_url"], ["Slack通知地址"],
                        ["slack_incoming_hook", "notify_url"], ["Slack回调"]),
    "whsec": _k("credentials", ["STRIPE_SIGNING_SECRET", "webhook_secret"], ["Stripe签名密钥"],
                ["stripe_whsec", "endpoint_secret"], ["回调签名密钥"]),
    "google_key": _k("credentials", ["GOOGLE_MAPS_KEY", "firebase.apiKey"], ["谷歌API密钥"], ["GCP_API_KEY", "maps_key"],
                     ["GoogleKey"]),
    "twilio_token": _k("credentials", ["TWILIO_AUTH_TOKEN"], ["Twilio令牌"], ["sms.twilio_secret", "sms_auth"],
                       ["短信服务令牌"]),
    "azure_storage": _k("credentials", ["AZURE_STORAGE_CONNECTION_STRING"], ["Azure存储连接"],
                        ["AzureWebJobsStorage", "blob_conn"], ["Blob连接串"]),
    "dingtalk": _k("credentials", ["DINGTALK_WEBHOOK"], ["钉钉机器人"], ["ding_robot_url"], ["钉钉通知地址"]),
    "wecom": _k("credentials", ["WECOM_WEBHOOK"], ["企业微信机器人"], ["wxwork_hook"], ["企微回调地址"]),
    "basic_auth": _k("credentials", ["Authorization"], ["认证头"], ["proxy-authorization", "auth_header"], ["鉴权头"]),
    "jwt_secret": _k("credentials", ["JWT_SECRET", "jwt.signing-key"], ["JWT密钥"], ["SECRET_KEY", "session_secret"],
                     ["会话密钥"]),
    "mailgun": _k("credentials", ["MAILGUN_API_KEY"], ["Mailgun密钥"], ["mg_key"], ["邮件服务密钥"]),
    "pem": _k("credentials", ["tls.key", "ssh_private_key"], ["私钥文件"], ["id_rsa", "signing_key_pem"], ["证书私钥"]),
    # contact
    "phone": _k("contact", ["Mobile", "phone_primary", "contact.tel", "Tel."], ["联系电话", "手机号码"],
                ["MobilePhone", "cell", "emergency_contact_phone", "Ph#"], ["紧急联系人电话", "手机"]),
    "email": _k("contact", ["Email", "contact.email", "e_mail_addr"], ["电子邮箱"],
                ["EmailAddress", "personal_email", "notify_to"], ["邮件地址"]),
    "address": _k("contact", ["Mailing Street", "home_address", "patient.address.line"], ["家庭住址", "现住址"],
                  ["Street Address", "residential_addr", "addr1"], ["户籍地址", "通讯地址"]),
}


def labels(kind: str, pool: str) -> Labels:
    k = KINDS[kind]
    return k.a if pool == "a" else k.b


def pool_labels(pool: str) -> set[str]:
    return {label for kind in KINDS for label in (*labels(kind, pool).en, *labels(kind, pool).zh)}


@dataclass(frozen=True)
class Item:
    label: str
    value: Value


# --- surface forms ----------------------------------------------------------------------------------------------

def _surface(rng: random.Random, value: Value, pool: str, wrap: bool) -> Value:
    """Upper (a) or lower (b) case, other separators, or a value wrapped across a line (text containers only)."""
    if value.family == "credentials" or value.core is not None:
        return value
    text, form = value.text, rng.random()
    if form < 0.15:
        text = text.upper() if pool == "a" else text.lower()
    elif form < 0.25 and any(ch in text for ch in " -"):
        text = text.replace(" ", ".").replace("-", ".") if pool == "a" else text.replace(" ", "/").replace("-", "")
    elif form < 0.5 and wrap and len(text) >= 10:
        cut = text.rfind(" ", 0, len(text) // 2 + 3)
        text = text[:cut] + "\n" + text[cut + 1:] if cut > 0 else text[:len(text) // 2] + "\n" + text[len(text) // 2:]
    return Value(text, value.family, value.field, value.label_en, value.label_zh, value.detectable, value.core)


# --- containers -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Extras:
    """Strings of the wild containers the agent needs besides ``corpus._needed``."""
    record_id: str  # a CRM record id
    pod: str
    request_path: str
    ip: str
    digest: str
    line_ref: str

    def all(self) -> list[str]:
        return [self.record_id, self.pod, self.request_path, self.ip, self.digest, self.line_ref]


def _extras(rng: random.Random) -> Extras:
    low = string.ascii_lowercase + string.digits
    return Extras(
        record_id="0015g00000" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(8)),
        pod=f"{rng.choice(['billing', 'payroll', 'crm-sync'])}-{''.join(rng.choice('0123456789abcdef') for _ in range(9))}"
            f"-{''.join(rng.choice(low) for _ in range(5))}",
        request_path=f"/api/v2/orders/{rng.randint(10_000, 999_999)}/items",
        ip=f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
        digest="sha256:" + "".join(rng.choice("0123456789abcdef") for _ in range(64)),
        line_ref=f"{rng.choice(['main', 'export', 'sync'])}.py:{rng.randint(20, 900)}",
    )


@dataclass(frozen=True)
class Ctx:
    rng: random.Random
    pool: str
    zh: bool
    needed: list[str]
    extras: Extras


Render = Callable[[list[Item], Ctx], str]


def _dob(rng: random.Random) -> str:  # context, not a unit
    return f"{rng.randint(1955, 2003)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _csv_cell(text: str, sep: str) -> str:
    return '"' + text.replace('"', '""') + '"' if (sep in text or "\n" in text or '"' in text) else text


def crm_csv(items: list[Item], c: Ctx) -> str:
    """A Salesforce (a) or HubSpot (b) report export; Chinese cases: an ERP export, tab-separated."""
    sep = "\t" if c.zh else ("," if c.pool == "a" else ";")
    head = ["记录ID" if c.zh else ("Record ID" if c.pool == "a" else "hs_object_id")]
    head += [i.label for i in items] + ["创建时间" if c.zh else "Created Date"]
    row = [c.extras.record_id] + [i.value.text for i in items] + [c.needed[7]]
    if c.pool == "a" and not c.zh:
        head = [f'"{h}"' for h in head]
        row = [f'"{r}"' for r in row]
    else:
        row = [_csv_cell(r, sep) for r in row]
    title = f"导出 {c.needed[9]} 至 {c.needed[0]}" if c.zh else f"Report export: {c.needed[9]} to {c.needed[0]}"
    return f"{title}\n{sep.join(head)}\n{sep.join(row)}\n"


def _nest(record: dict[str, Any], dotted: str, text: str) -> None:
    *parents, leaf = dotted.split(".")
    node = record
    for p in parents:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            return
    node[leaf] = text


def nested_json(items: list[Item], c: Ctx) -> str:
    """A FHIR-ish bundle (a: identifiers as type/value pairs) or a JSON:API document (b: dotted labels nest)."""
    if c.pool == "a":
        resource: dict[str, Any] = {"resourceType": "Patient", "id": c.needed[11], "birthDate": _dob(c.rng),
                                    "identifier": [], "meta": {"lastUpdated": c.needed[7], "source": c.needed[0]}}
        for i in items:
            if "." in i.label:
                _nest(resource, i.label, i.value.text)
            else:
                resource["identifier"].append({"type": {"text": i.label}, "value": i.value.text})
        doc: dict[str, Any] = {"resourceType": "Bundle", "type": "searchset", "total": 1,
                               "entry": [{"fullUrl": f"Patient/{c.needed[11]}", "resource": resource}]}
    else:
        attributes: dict[str, Any] = {"created_at": c.needed[7], "dob": _dob(c.rng)}
        for i in items:
            _nest(attributes, i.label, i.value.text)
        doc = {"data": {"type": "people", "id": c.extras.record_id, "attributes": attributes},
               "meta": {"trace": c.needed[11], "took": c.needed[3]}}
    return json.dumps(doc, ensure_ascii=False, indent=2)


def keyed_json(items: list[Item], c: Ctx) -> str:
    """A dict keyed by the first value (say an account number); the others as fields of its entry."""
    first, rest = items[0], items[1:]
    entry: dict[str, Any] = {"updated": c.needed[7], "rows": c.needed[9]}
    for i in rest:
        entry[i.label] = i.value.text
    outer = ("by_" if c.pool == "a" else "index.") + first.label
    return json.dumps({outer: {first.value.text: entry}, "source": c.needed[0], "build": c.needed[12]},
                      ensure_ascii=False, indent=None if c.pool == "b" else 1)


def statement_csv(items: list[Item], c: Ctx) -> str:
    """A bank statement: labelled preamble lines, then transactions (ordinary numbers the agent needs)."""
    sep = "," if c.pool == "a" else ";"
    pre = [f"{i.label}{sep}{_csv_cell(i.value.text, sep)}" if c.pool == "a" else f"{i.label}: {i.value.text}"
           for i in items]
    head = "日期,摘要,金额" if c.zh else sep.join(["Date", "Description", "Amount"])
    rows = [f"{c.needed[7][:10]}{sep}{c.needed[8]}{sep}{c.rng.randint(3, 900)}.{c.rng.randint(10, 99)}"
            for _ in range(2)]
    return "\n".join(pre + ["", head] + rows)


def _yaml_scalar(text: str, indent: int) -> str:
    if "\n" in text:
        pad = " " * (indent + 2)
        return "|\n" + "\n".join(pad + line for line in text.split("\n"))
    return json.dumps(text, ensure_ascii=False) if any(ch in text for ch in ":#'\"") else text


def k8s_secret(items: list[Item], c: Ctx) -> str:
    """A Secret manifest: ``stringData`` (a) or ``data`` (b; ``make_case`` hands it the values in base64)."""
    lines = ["apiVersion: v1", "kind: Secret", "metadata:", f"  name: {c.extras.pod.rsplit('-', 2)[0]}-secrets",
             f"  annotations:\n    deployed-from: {c.extras.digest}", "type: Opaque",
             "stringData:" if c.pool == "a" else "data:"]
    lines += [f"  {i.label}: {_yaml_scalar(i.value.text, 2)}" for i in items]
    return "\n".join(lines)


def env_ini(items: list[Item], c: Ctx) -> str:
    """An ini file with sections (a) or a .env file (b); multi-line values in quotes, with real newlines."""
    if c.pool == "a":
        lines = [f"; written by {c.needed[0]} on {c.needed[7]}", "[server]", f"bind = {c.extras.ip}",
                 f"port = {c.needed[6].split()[-1]}", "[secrets]"]
        for i in items:
            text = i.value.text.replace("\n", "\n    ")  # ini continuation lines
            lines.append(f"{i.label} = {text}")
    else:
        lines = [f"# {c.extras.pod} {c.needed[4]}", f"LISTEN={c.extras.ip}:{c.needed[6].split()[-1]}"]
        for i in items:
            text = f'"{i.value.text}"' if ("\n" in i.value.text or " " in i.value.text) else i.value.text
            lines.append(f"{i.label}={text}")
    return "\n".join(lines)


def logs(items: list[Item], c: Ctx) -> str:
    """nginx access lines with values in the query string and app lines (a), or logfmt (b)."""
    lines = []
    for n, i in enumerate(items):
        if c.pool == "a" and i.label.replace("_", "").replace(".", "").isalnum() and i.value.text.isascii():
            query = urllib.parse.urlencode({i.label: i.value.text})
            lines.append(f'{c.extras.ip} - - [{c.needed[7]}] "GET {c.extras.request_path}?{query} HTTP/1.1" 200 '
                         f'{c.rng.randint(200, 9000)} "-" "python-requests/2.32"')
        elif c.pool == "a":
            lines.append(f"{c.needed[7]} INFO [{c.extras.pod}] updated {i.label}: {i.value.text} ({c.needed[3]})")
        else:
            lines.append(f'ts={c.needed[7]} level=info pod={c.extras.pod} step={n} {i.label}="{i.value.text}" '
                         f"caller={c.extras.line_ref}")
    lines.append(f"{c.needed[7]} DEBUG commit {c.needed[5]} {c.needed[2]} {c.needed[10]} {c.needed[12]}")
    return "\n".join(lines)


def markdown_table(items: list[Item], c: Ctx) -> str:
    """A vertical field/value table (a) or one row under the labels (b)."""
    if c.pool == "a":
        head = "| 字段 | 内容 |" if c.zh else "| Field | Value |"
        rows = [f"| {i.label} | {i.value.text} |" for i in items]
        return "\n".join([f"Found in `{c.needed[0]}`:", "", head, "|---|---|"] + rows)
    head = "| # | " + " | ".join(i.label for i in items) + " |"
    rule = "|---|" + "---|" * len(items)
    row = f"| {c.needed[9]} | " + " | ".join(i.value.text for i in items) + " |"
    return "\n".join([head, rule, row, "", f"_{c.needed[13]} in {c.extras.line_ref}_"])


def message_text(items: list[Item], c: Ctx) -> str:
    """A forwarded e-mail with ``label: value`` lines (a) or a ticket comment with inline values (b)."""
    if c.zh:
        body = "\n".join(f"{i.label}：{i.value.text}" if c.pool == "a" else f"客户说{i.label}是{i.value.text}，"
                         for i in items)
        return f"主题：资料更新 {c.needed[8]}\n\n您好，\n\n客户资料如下，请核对：\n{body}\n\n附件已放在 {c.needed[0]}。\n谢谢"
    if c.pool == "a":
        body = "\n".join(f"{i.label}: {i.value.text}" for i in items)
        return (f"From: support-queue\nSubject: RE: update for {c.needed[8]}\n\nHi team,\n\nForwarding the customer's "
                f"details as they sent them:\n\n{body}\n\nPlease update the record and re-run {c.needed[0]}.\n\nThanks")
    parts = [f"their {i.label} is {i.value.text}" if n % 2 else f"{i.label} -> {i.value.text}"
             for n, i in enumerate(items)]
    return (f"**Comment** on {c.needed[8]} (build {c.needed[12]}):\nCustomer called back; " + "; ".join(parts)
            + f".\nAttached log at {c.extras.line_ref}, {c.needed[13]}.")


def payroll_yaml(items: list[Item], c: Ctx) -> str:
    """An HR payroll record (a) or a Helm values file with env entries (b)."""
    if c.pool == "a":
        lines = ["payroll:", f"  run: {c.needed[7]}", "  employees:", f"    - emp_code: E{c.rng.randint(1000, 99999)}",
                 f"      dob: {_dob(c.rng)}"]
        lines += [f"      {i.label}: {_yaml_scalar(i.value.text, 6)}" for i in items]
    else:
        lines = ["image:", f"  digest: {c.extras.digest}", "env:"]
        for i in items:
            lines += [f"  - name: {i.label}", f"    value: {_yaml_scalar(i.value.text, 4)}"]
    return "\n".join(lines)


@dataclass(frozen=True)
class Container:
    render: Render
    json_like: bool  # no raw newlines inside values (they would be escaped)
    prose: bool  # a value may be wrapped across a line


CONTAINERS = [Container(crm_csv, False, False), Container(nested_json, True, False),
              Container(keyed_json, True, False), Container(statement_csv, False, False),
              Container(k8s_secret, False, False), Container(env_ini, False, False),
              Container(logs, True, False), Container(markdown_table, True, False),
              Container(message_text, True, True), Container(payroll_yaml, False, False)]


# --- cases ------------------------------------------------------------------------------------------------------

def _draw(rng: random.Random, zh: bool, pool: str, container: Container) -> Item:
    while True:
        gens = wv.ZH_GENERATORS if zh and rng.random() < 0.75 else wv.GENERATORS
        family = rng.choices(list(wv.FAMILY_WEIGHTS), weights=list(wv.FAMILY_WEIGHTS.values()))[0]
        kind, text, core = rng.choice(gens[family])(rng)
        if container.json_like and "\n" in text:
            continue
        if container.render is keyed_json and (kind == "pem" or "\n" in text):
            continue
        break
    spec = KINDS[kind]
    names = labels(kind, pool)
    zh_label = zh and rng.random() < (0.25 if spec.family == "credentials" else 0.75)
    label = rng.choice(names.zh if zh_label else names.en)
    value = Value(text, spec.family, kind, label, names.zh[0], True, core)
    return Item(label, _surface(rng, value, pool, container.prose))


def _base64(item: Item) -> Item:
    """A Kubernetes ``data:`` entry: the whole base64 text is the secret (anyone can decode it)."""
    v = item.value
    return Item(item.label, Value(base64.b64encode(v.text.encode()).decode(), v.family, v.field, v.label_en,
                                  v.label_zh, v.detectable))


def _listed_only(rng: random.Random, zh: bool) -> Item:
    value = listed_only_value(rng)
    if zh and rng.random() < 0.5:
        value = Value(rng.choice(["星河计划", "北斗项目", "青鸾行动"]), "documents", "internal_ref", "ref", "编号",
                      detectable=False)
    return Item("项目" if zh else "project", value)


def _prose(items: list[Item], c: Ctx) -> str:
    if c.zh:
        said = "，".join(f"{i.label}：{i.value.text}" for i in items)
        return f"帮我查一下这个客户，{said}。结果写到 {c.needed[0]}，{c.needed[8]} 也顺便更新。"
    said = " and ".join(f"{i.label}: {i.value.text}" for i in items)
    return f"Can you reconcile this customer? {said}. Write what you find to {c.needed[0]} and update {c.needed[8]}."


def make_case(seed: int, index: int, pool: str) -> Case:
    if pool not in POOL_NAMES:
        raise ValueError(f"unknown pool {pool!r}")
    rng = random.Random(f"wild-{pool}-{seed}-{index}")
    zh = rng.random() < 0.4
    needed, extras = _needed(rng), _extras(rng)
    c = Ctx(rng, pool, zh, needed, extras)
    case = Case(id=f"w{pool}{seed}-{index}", zh=zh, body={}, needed=needed + extras.all() + [TOOLS[0], TOOLS[3]])
    prose_container = Container(_prose, True, False)
    said = [_draw(rng, zh, pool, prose_container) for _ in range(2)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": _SYSTEM},
                                      {"role": "user", "content": _prose(said, c)}]
    case.values += [i.value for i in said]
    for _ in range(rng.randint(2, 4)):
        call_id, call = tool_call(rng, needed[0])
        case.needed.append(call_id)
        messages.append(call)
        container = CONTAINERS[rng.randrange(len(CONTAINERS))]
        items: list[Item] = []
        wanted = rng.randint(3, 6)
        while len(items) < wanted:  # one label once per record (a JSON object keeps the last)
            item = _draw(rng, zh, pool, container)
            if all(item.label != i.label for i in items):
                items.append(item)
        if rng.random() < 0.3:
            items.append(_listed_only(rng, zh))
        if container.render is k8s_secret and pool == "b":
            items = [_base64(i) for i in items]
        messages.append({"role": "tool", "tool_call_id": call_id, "content": container.render(items, c)})
        case.values += [i.value for i in items]
    return finish(case, messages, needed)


def corpus(seed: int, cases: int, pool: str) -> list[Case]:
    return [make_case(seed, i, pool) for i in range(cases)]
