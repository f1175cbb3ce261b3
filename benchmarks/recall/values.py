"""Sensitive values with real check digits, each annotated with its family, for the held-out recall corpus.

Every generator takes a ``random.Random`` and returns a ``Value``: the text as it appears, its family (the issue's
five), a field name (used as the listed unit's field and, where ``label`` is set, as the label next to it), a
weight, and whether a pattern or a label can find it at all (``detectable``; values only a list can know are
counted apart).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

import phonenumbers

FAMILIES = ("identity", "documents", "financial", "credentials", "contact")
WEIGHTS = {"identity": 3.0, "documents": 2.0, "financial": 3.0, "credentials": 3.0, "contact": 2.0}


@dataclass(frozen=True)
class Value:
    text: str
    family: str
    field: str
    label_en: str
    label_zh: str
    detectable: bool = True
    core: str | None = None  # the part whose presence in the sent body is a leak (default: the whole text)

    @property
    def secret(self) -> str:
        return self.core or self.text

    @property
    def weight(self) -> float:
        return WEIGHTS[self.family]


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _alnum(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _upper(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(n))


def luhn_complete(prefix: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(prefix)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return prefix + str((10 - total % 10) % 10)


def _mrz_check(field: str) -> str:
    weights = (7, 3, 1)
    total = 0
    for i, ch in enumerate(field):
        v = 0 if ch == "<" else int(ch) if ch.isdigit() else ord(ch) - 55
        total += v * weights[i % 3]
    return str(total % 10)


def iban(country: str, bban: str) -> str:
    rearranged = bban + country + "00"
    number = int("".join(str(int(ch, 36)) for ch in rearranged))
    return f"{country}{98 - number % 97:02d}{bban}"


_BBAN: dict[str, Callable[[random.Random], str]] = {
    "DE": lambda r: _digits(r, 18),
    "FR": lambda r: _digits(r, 10) + _alnum(r, 11, string.ascii_uppercase + string.digits) + _digits(r, 2),
    "NL": lambda r: _upper(r, 4) + _digits(r, 10),
    "ES": lambda r: _digits(r, 20),
    "GB": lambda r: _upper(r, 4) + _digits(r, 14),
    "IT": lambda r: _upper(r, 1) + _digits(r, 10) + _digits(r, 12),
    "BE": lambda r: _digits(r, 12),
    "CH": lambda r: _digits(r, 17),
    "PL": lambda r: _digits(r, 24),
}


def iban_value(rng: random.Random) -> Value:
    country = rng.choice(sorted(_BBAN))
    compact = iban(country, _BBAN[country](rng))
    grouped = " ".join(compact[i:i + 4] for i in range(0, len(compact), 4))
    text = rng.choice([compact, grouped, grouped.lower(), "-".join(grouped.split())])
    return Value(text, "financial", "iban", "IBAN", "国际银行账号")


def aba_value(rng: random.Random) -> Value:
    while True:
        d = [int(c) for c in rng.choice("0123") + _digits(rng, 7)]
        for last in range(10):
            full = d + [last]
            if (3 * (full[0] + full[3] + full[6]) + 7 * (full[1] + full[4] + full[7])
                    + full[2] + full[5] + full[8]) % 10 == 0:
                return Value("".join(map(str, full)), "financial", "routing_number", "routing number", "ABA路由号")


def card_value(rng: random.Random) -> Value:
    kind = rng.choice(["visa", "mc", "unionpay", "amex"])
    if kind == "visa":
        number = luhn_complete("4" + _digits(rng, 14))
    elif kind == "mc":
        number = luhn_complete("5" + rng.choice("12345") + _digits(rng, 13))
    elif kind == "unionpay":
        number = luhn_complete("62" + _digits(rng, rng.choice([14, 16])))
    else:
        number = luhn_complete("3" + rng.choice("47") + _digits(rng, 12))
    style = rng.choice(["plain", "4s", "dash", "dots", "6-4"])
    if style == "4s":
        number = " ".join(number[i:i + 4] for i in range(0, len(number), 4))
    elif style == "dash":
        number = "-".join(number[i:i + 4] for i in range(0, len(number), 4))
    elif style == "dots":
        number = ".".join(number[i:i + 4] for i in range(0, len(number), 4))
    elif style == "6-4":
        number = f"{number[:6]} {number[6:10]} {number[10:]}"
    return Value(number, "financial", "card_number", "card number", "银行卡号")


def sort_code_value(rng: random.Random) -> Value:
    return Value(f"{_digits(rng, 2)}-{_digits(rng, 2)}-{_digits(rng, 2)}", "financial", "sort_code", "sort code",
                 "银行代码")


def salary_value(rng: random.Random) -> Value:
    amount = rng.randrange(28_000, 240_000, 50)
    text = rng.choice([str(amount), f"{amount:,}", f"{amount:,}.00", f"¥{amount}"])
    label = rng.choice([("salary", "工资"), ("annual salary", "年薪"), ("balance", "余额")])
    return Value(text, "financial", label[0].replace(" ", "_"), label[0], label[1])


def alipay_value(rng: random.Random) -> Value:
    phone = "1" + rng.choice("3589") + _digits(rng, 9)
    return Value(rng.choice([phone, f"{_alnum(rng, 7, string.ascii_lowercase)}@{rng.choice(['163.com', 'qq.com'])}"]),
                 "financial", "alipay", "Alipay account", "支付宝账号")


def passport_value(rng: random.Random) -> Value:
    country = rng.choice(["US", "UK", "CN", "DE", "IN", "FR", "CA", "NL"])
    text = {
        "US": lambda: rng.choice(["", "A"]) + _digits(rng, 9 if rng.random() < 0.5 else 8),
        "UK": lambda: _digits(rng, 9),
        "CN": lambda: rng.choice("EG") + _digits(rng, 8),
        "DE": lambda: "C" + _alnum(rng, 8, "CFGHJKLMNPRTVWXYZ0123456789"),
        "IN": lambda: _upper(rng, 1) + _digits(rng, 7),
        "FR": lambda: _digits(rng, 2) + _upper(rng, 2) + _digits(rng, 5),
        "CA": lambda: _upper(rng, 2) + _digits(rng, 6),
        "NL": lambda: _upper(rng, 2) + _alnum(rng, 6, string.ascii_uppercase + string.digits) + _digits(rng, 1),
    }[country]()
    return Value(text, "identity", "passport", "passport no.", "护照号码")


def mrz_value(rng: random.Random) -> Value:
    number = rng.choice("EGCP") + _digits(rng, 8)
    nationality = rng.choice(["CHN", "GBR", "USA", "DEU", "FRA", "NLD", "IND", "CAN"])
    birth = f"{rng.randint(50, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    expiry = f"{rng.randint(27, 35)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    personal = "<" * 14
    line = (number + _mrz_check(number) + nationality + birth + _mrz_check(birth) + rng.choice("MF") + expiry
            + _mrz_check(expiry) + personal + _mrz_check(personal))
    composite = line[0:10] + line[13:20] + line[21:43]
    return Value(line + _mrz_check(composite), "identity", "mrz", "MRZ", "机读码")


def licence_value(rng: random.Random) -> Value:
    kind = rng.choice(["CA", "NY", "FL", "DVLA", "TX"])
    text = {
        "CA": lambda: _upper(rng, 1) + _digits(rng, 7),
        "NY": lambda: _digits(rng, 9),
        "FL": lambda: f"{_upper(rng, 1)}{_digits(rng, 3)}-{_digits(rng, 3)}-{_digits(rng, 2)}-{_digits(rng, 3)}-0",
        "TX": lambda: _digits(rng, 8),
        "DVLA": lambda: _upper(rng, 5) + _digits(rng, 6) + _upper(rng, 2) + _digits(rng, 1) + _upper(rng, 2),
    }[kind]()
    return Value(text, "identity", "drivers_license", "driver's license", "驾驶证号")


def ni_value(rng: random.Random) -> Value:
    first = rng.choice("ABCEGHJKLMNOPRSTWXYZ")
    second = rng.choice("ABCEGHJKLMNPRSTWXYZ")
    return Value(f"{first}{second}{_digits(rng, 6)}{rng.choice('ABCD')}", "identity", "ni_number",
                 "National Insurance number", "英国国民保险号")


def a_number_value(rng: random.Random) -> Value:
    return Value("A" + _digits(rng, 9), "identity", "a_number", "A-Number", "外国人登记号")


def mrn_value(rng: random.Random) -> Value:
    return Value(rng.choice(["MRN-", "MRN", ""]) + _digits(rng, 7), "identity", "mrn", "MRN", "病历号")


def cn_id_value(rng: random.Random) -> Value:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    body = (rng.choice(["110105", "310104", "440305", "320102", "510107"]) + str(rng.randint(1950, 2004))
            + f"{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}" + _digits(rng, 3))
    check = "10X98765432"[sum(int(body[i]) * weights[i] for i in range(17)) % 11]
    return Value(body + check, "identity", "id_card", "ID card", "身份证号")


_FIRST = ["Maria", "James", "Aisha", "Lukas", "Sofia", "Daniel", "Priya", "Oliver", "Chloé", "Mateo", "Hannah",
          "Kenji", "Fatima", "Noah", "Ingrid", "Tomasz"]
_LAST = ["Gonzalez", "Whitfield", "Okafor", "Brandt", "Rossi", "Kowalski", "Nakamura", "Haddad", "Lindqvist",
         "Patel", "Moreau", "O'Connell", "van der Berg", "Fischer"]
_ZH_SURNAMES = "王李张刘陈杨赵黄周吴徐孙胡朱高林何郭马罗"
_ZH_GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英"


def name_value(rng: random.Random, zh: bool = False) -> Value:
    if zh:
        text = rng.choice(_ZH_SURNAMES) + "".join(rng.choice(_ZH_GIVEN) for _ in range(rng.choice([1, 2])))
    else:
        text = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
    return Value(text, "identity", "full_name", "name", "姓名")


def account_value(rng: random.Random) -> Value:
    kinds: list[tuple[str, str, Callable[[], str]]] = [("account number", "账号", lambda: _digits(rng, rng.choice([10, 12, 16]))),
                       ("policy number", "保单号", lambda: f"POL-{_digits(rng, 4)}-{_digits(rng, 6)}"),
                       ("membership id", "会员号", lambda: f"M{_digits(rng, 8)}"),
                       ("case number", "案件编号", lambda: f"CASE-{_digits(rng, 6)}"),
                       ("customer number", "客户编号", lambda: f"{_upper(rng, 2)}{_digits(rng, 8)}")]
    kind = rng.choice(kinds)
    return Value(kind[2](), "documents", kind[0].replace(" ", "_"), kind[0], kind[1])


def token_value(rng: random.Random) -> Value:
    hexd = "0123456789abcdef"
    tokens: list[tuple[str, Callable[[], str]]] = [
        ("NPM_TOKEN", lambda: "npm_" + _alnum(rng, 36)),
        ("DD_API_KEY", lambda: _alnum(rng, 32, hexd)),
        ("HUBSPOT_TOKEN", lambda: f"pat-na1-{_alnum(rng, 8, hexd)}-{_alnum(rng, 4, hexd)}-{_alnum(rng, 4, hexd)}-"
                                  f"{_alnum(rng, 4, hexd)}-{_alnum(rng, 12, hexd)}"),
        ("SF_ACCESS_TOKEN", lambda: f"00D{_alnum(rng, 12)}!{_alnum(rng, 60, string.ascii_letters + string.digits + '._')}"),
        ("ALIYUN_ACCESS_KEY_ID", lambda: "LTAI" + _alnum(rng, 20)),
        ("SLACK_WEBHOOK_URL", lambda: f"https://hooks.slack.com/services/T{_upper(rng, 8)}/B{_upper(rng, 8)}/"
                                      f"{_alnum(rng, 24)}"),
        ("STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + _alnum(rng, 32)),
        ("GOOGLE_API_KEY", lambda: "AIza" + _alnum(rng, 35, string.ascii_letters + string.digits + "-_")),
        ("GITHUB_TOKEN", lambda: "ghp_" + _alnum(rng, 36)),
        ("SENDGRID_API_KEY", lambda: f"SG.{_alnum(rng, 22)}.{_alnum(rng, 43)}"),
    ]
    kind = rng.choice(tokens)
    return Value(kind[1](), "credentials", kind[0].lower(), kind[0], kind[0])


def password_value(rng: random.Random) -> Value:
    words = ["Summer", "Falcon", "Tiger", "Maple", "Orion", "Delta", "Harbor"]
    text = rng.choice(words) + rng.choice(["!", "#", "@", "$", "_"]) + _digits(rng, rng.choice([2, 4])) + \
        rng.choice(["", "x", "Qz", "!"])
    return Value(text, "credentials", "password", "password", "密码")


def connection_value(rng: random.Random) -> Value:
    scheme = rng.choice(["postgresql", "mysql", "mongodb+srv", "redis", "amqp", "sqlserver", "smtp", "ftp"])
    user = rng.choice(["app", "svc_etl", "admin", "reporting"])
    pw = _alnum(rng, rng.randint(10, 18))
    host = rng.choice(["db.internal", "10.2.3.4", "cache-01.prod.local", "mq.example.net"])
    return Value(f"{scheme}://{user}:{pw}@{host}:5432/main", "credentials", "connection_string", "DATABASE_URL",
                 "数据库连接", core=pw)


def pem_value(rng: random.Random) -> Value:
    body = "\n".join(_alnum(rng, 64, string.ascii_letters + string.digits + "+/") for _ in range(4))
    kind = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    return Value(f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----", "credentials", "private_key",
                 "private_key", "私钥", core=body.split("\n")[1])


_PHONE_REGIONS = ["DE", "FR", "NL", "JP", "SG", "IN", "GB", "US", "CN"]


def phone_value(rng: random.Random) -> Value:
    region = rng.choice(_PHONE_REGIONS)
    example = phonenumbers.example_number_for_type(region, rng.choice(
        [phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE]))
    assert example is not None
    national = str(example.national_number)
    while True:
        keep = max(2, len(national) - 6)
        candidate = national[:keep] + _digits(rng, len(national) - keep)
        number = phonenumbers.parse("+" + str(example.country_code) + candidate)
        if phonenumbers.is_valid_number(number):
            break
    style = rng.choice(["national", "international", "e164", "compact", "fullwidth"])
    if style == "national":
        text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
    elif style == "international":
        text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
    elif style == "e164":
        text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    elif style == "compact":
        text = "".join(ch for ch in phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
                       if ch.isdigit())
    else:
        plain = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
        text = plain.translate({ord(c): ord(c) + 0xFEE0 for c in "0123456789"})
    return Value(text, "contact", "phone", "phone", "电话")


def email_value(rng: random.Random) -> Value:
    first, last = rng.choice(_FIRST).lower().replace("é", "e"), rng.choice(_LAST).lower().replace(" ", "").replace("'", "")
    text = f"{first}.{last}{rng.randint(1, 99)}@{rng.choice(['gmail.com', 'outlook.de', 'acme-corp.io', '163.com'])}"
    return Value(rng.choice([text, text.upper(), text.replace("@", "%40")]), "contact", "email", "email", "邮箱")


_STREETS = ["Maple Avenue", "Kingsway", "Rue de Rivoli", "Hauptstraße", "Elm Street", "Keizersgracht"]
_CITIES = ["Springfield, IL 62704", "London SW1A 2AA", "75001 Paris", "10115 Berlin", "Amsterdam 1015 CJ"]
_ZH_ADDR = ["北京市朝阳区建国路88号", "上海市浦东新区世纪大道100号", "广州市天河区体育西路191号", "深圳市南山区科技园南路15号",
            "杭州市西湖区文三路478号"]


def address_value(rng: random.Random, zh: bool = False) -> Value:
    if zh:
        text = rng.choice(_ZH_ADDR) + f"{rng.randint(1, 30)}栋{rng.randint(101, 2505)}室"
    else:
        text = f"{rng.randint(1, 980)} {rng.choice(_STREETS)}, {rng.choice(_CITIES)}"
    return Value(text, "contact", "address", "address", "地址")


def listed_only_value(rng: random.Random) -> Value:
    """A value nothing but a list can know: a bare project codename or an unlabelled amount."""
    text = rng.choice(["Project " + rng.choice(["Bluefin", "Kestrel", "Nimbus", "Quartz"]),
                       str(rng.randrange(10_000, 99_999))])
    return Value(text, "documents", "internal_ref", "ref", "编号", detectable=False)


GENERATORS: list[Callable[[random.Random], Value]] = [
    iban_value, aba_value, card_value, sort_code_value, salary_value, alipay_value,
    passport_value, mrz_value, licence_value, ni_value, a_number_value, mrn_value, cn_id_value,
    lambda r: name_value(r, zh=False), lambda r: name_value(r, zh=True),
    account_value, token_value, password_value, connection_value, pem_value,
    phone_value, email_value, lambda r: address_value(r, zh=False), lambda r: address_value(r, zh=True),
]
