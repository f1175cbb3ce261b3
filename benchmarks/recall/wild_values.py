"""More sensitive values with real check digits, for the ``wild`` variants of the recall corpus.

Each generator returns ``(kind, text, core)``: the value kind (which picks its labels in ``wild.POOLS``), the text as
it appears and, where only part of it is the secret (a URL around a token), that part. ``values.py`` keeps the
original corpus's generators; these add what real exports carry that it lacks (US SSNs, Canadian SINs, NHS and
Aadhaar numbers, US licences by state, DVLA numbers, cloud keys beyond the big five, webhook URLs, secrets inside
base64, bank cards and payroll amounts in more currencies).
"""

from __future__ import annotations

import base64
import random
import string
import uuid
from collections.abc import Callable

import phonenumbers

from benchmarks.recall import values as v

Drawn = tuple[str, str, str | None]  # kind, text, core

_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_UP = string.ascii_uppercase


def _d(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _a(rng: random.Random, n: int, alphabet: str = _ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _group(text: str, sizes: tuple[int, ...], sep: str) -> str:
    out, i = [], 0
    for size in sizes:
        out.append(text[i:i + size])
        i += size
    if i < len(text):
        out.append(text[i:])
    return sep.join(p for p in out if p)


# --- identity ---------------------------------------------------------------------------------------------------

def ssn(rng: random.Random) -> Drawn:
    while True:
        area = rng.randint(1, 899)
        if area != 666:
            break
    number = f"{area:03d}{rng.randint(1, 99):02d}{rng.randint(1, 9999):04d}"
    return "ssn", _group(number, (3, 2, 4), rng.choice(["-", " ", "-", ""])), None


def sin_ca(rng: random.Random) -> Drawn:
    number = v.luhn_complete(rng.choice("1234567") + _d(rng, 7))
    return "sin", _group(number, (3, 3, 3), rng.choice([" ", "-", ""])), None


def nhs(rng: random.Random) -> Drawn:
    while True:
        body = rng.choice("4679") + _d(rng, 8)
        check = 11 - sum(int(c) * (10 - i) for i, c in enumerate(body)) % 11
        if check == 11:
            check = 0
        if check != 10:
            return "nhs", _group(body + str(check), (3, 3, 4), rng.choice([" ", "-", ""])), None


_VERHOEFF_D = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
               [3, 4, 0, 1, 2, 8, 9, 5, 6, 7], [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
               [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3], [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
               [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]]
_VERHOEFF_P = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
               [8, 9, 1, 6, 0, 4, 3, 5, 2, 7], [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
               [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8]]
_VERHOEFF_INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9]


def verhoeff_complete(body: str) -> str:
    c = 0
    for i, ch in enumerate(reversed(body)):
        c = _VERHOEFF_D[c][_VERHOEFF_P[(i + 1) % 8][int(ch)]]
    return body + str(_VERHOEFF_INV[c])


def aadhaar(rng: random.Random) -> Drawn:
    number = verhoeff_complete(rng.choice("23456789") + _d(rng, 10))
    return "aadhaar", _group(number, (4, 4, 4), rng.choice([" ", "-", ""])), None


def pan_in(rng: random.Random) -> Drawn:
    return "pan_in", _a(rng, 3, _UP) + "P" + _a(rng, 1, _UP) + _d(rng, 4) + _a(rng, 1, _UP), None


def nric(rng: random.Random) -> Drawn:
    prefix = rng.choice("ST")
    digits = _d(rng, 7)
    total = sum(int(c) * w for c, w in zip(digits, (2, 7, 6, 5, 4, 3, 2), strict=True)) + (4 if prefix == "T" else 0)
    return "nric", prefix + digits + "JZIHGFEDCBA"[total % 11], None


def hkid(rng: random.Random) -> Drawn:
    letter = rng.choice("ACDEGHKMPRVYZ")
    digits = _d(rng, 6)
    total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(c) * (7 - i) for i, c in enumerate(digits))
    check = (11 - total % 11) % 11
    return "hkid", f"{letter}{digits}({'A' if check == 10 else check})", None


def tfn(rng: random.Random) -> Drawn:
    weights = (1, 4, 3, 7, 5, 8, 6, 9, 10)
    while True:
        number = _d(rng, 9)
        if number[0] != "0" and sum(int(c) * w for c, w in zip(number, weights, strict=True)) % 11 == 0:
            return "tfn", _group(number, (3, 3, 3), rng.choice([" ", ""])), None


def us_licence(rng: random.Random) -> Drawn:
    state = rng.choice(["WA", "IL", "PA", "NJ", "MI", "WI", "MD", "NY", "CA", "OH"])
    letter = _a(rng, 1, _UP)
    text = {
        "WA": lambda: "WDL" + _a(rng, 9, _UP + string.digits),
        "IL": lambda: f"{letter}{_d(rng, 3)}-{_d(rng, 4)}-{_d(rng, 4)}",
        "PA": lambda: f"{_d(rng, 2)} {_d(rng, 3)} {_d(rng, 3)}",
        "NJ": lambda: f"{letter}{_d(rng, 4)} {_d(rng, 5)} {_d(rng, 5)}",
        "MI": lambda: f"{letter} {_d(rng, 3)} {_d(rng, 3)} {_d(rng, 3)} {_d(rng, 3)}",
        "WI": lambda: f"{letter}{_d(rng, 3)}-{_d(rng, 4)}-{_d(rng, 4)}-{_d(rng, 2)}",
        "MD": lambda: f"{letter}-{_d(rng, 3)}-{_d(rng, 3)}-{_d(rng, 3)}-{_d(rng, 3)}",
        "NY": lambda: f"{_d(rng, 3)} {_d(rng, 3)} {_d(rng, 3)}",
        "CA": lambda: letter + _d(rng, 7),
        "OH": lambda: _a(rng, 2, _UP) + _d(rng, 6),
    }[state]()
    return "us_licence", text, None


def dvla(rng: random.Random) -> Drawn:
    surname = rng.choice(["MORGAN", "PATEL", "LI", "OKAFOR", "WHITFIELD", "KOWALSKI", "NG", "BRANDT"])
    year, month, day = rng.randint(1950, 2005), rng.randint(1, 12), rng.randint(1, 28)
    month += 50 * rng.randint(0, 1)
    first = (surname + "99999")[:5] + f"{str(year)[2]}{month:02d}{day:02d}{str(year)[3]}"
    text = first + _a(rng, 1, _UP) + rng.choice([_a(rng, 1, _UP), "9"]) + "9" + _a(rng, 2, _UP)
    return "dvla", rng.choice([text, f"{text[:5]} {text[5:11]} {text[11:]}"]), None


def ni_spaced(rng: random.Random) -> Drawn:
    text = v.ni_value(rng).text
    return "ni", rng.choice([text, f"{text[:2]} {text[2:4]} {text[4:6]} {text[6:8]} {text[8]}"]), None


def passport(rng: random.Random) -> Drawn:
    return "passport", v.passport_value(rng).text, None


def mrz(rng: random.Random) -> Drawn:
    text = v.mrz_value(rng).text
    return "mrz", text, text[:28]  # number, nationality, birth, sex, expiry (the filler run defeats the scorer)


def cn_id(rng: random.Random) -> Drawn:
    return "cn_id", v.cn_id_value(rng).text, None


def mrn(rng: random.Random) -> Drawn:
    return "mrn", rng.choice(["", "H", "MR"]) + _d(rng, rng.choice([7, 8, 10])), None


def a_number(rng: random.Random) -> Drawn:
    text = "A" + _d(rng, 9)
    return "a_number", rng.choice([text, f"A{text[1:4]}-{text[4:7]}-{text[7:]}"]), None


_FIRST = ["Eleanor", "Rahul", "Siobhan", "Mateus", "Yuki", "Amara", "Björn", "Camille", "Dmitri", "Leila", "Tobias",
          "Grace", "Arjun", "Nora"]
_LAST = ["Abernathy", "Srinivasan", "McCarthy", "Oliveira", "Takahashi", "Nwosu", "Johansson", "Lefèvre",
         "Volkov", "Karimi", "Hartmann", "Delacroix", "Chowdhury", "Quinn"]
_ZH_SUR = "欧阳诸葛赵钱孙李周吴郑冯陈褚卫蒋沈韩杨朱秦尤许何吕施"
_ZH_GIV = "子涵浩宇欣怡梓萱一诺思远佳琪俊杰雨桐宇轩若曦"


def person(rng: random.Random) -> Drawn:
    return "person", f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", None


def person_zh(rng: random.Random) -> Drawn:
    surname = rng.choice(["欧阳", "诸葛"]) if rng.random() < 0.1 else rng.choice(_ZH_SUR[4:])
    return "person", surname + "".join(rng.choice(_ZH_GIV) for _ in range(rng.choice([1, 2]))), None


# --- documents --------------------------------------------------------------------------------------------------

def bank_account(rng: random.Random) -> Drawn:
    return "bank_account", rng.choice([_d(rng, 8), _d(rng, 11), f"{_d(rng, 4)}-{_d(rng, 7)}", _d(rng, 14)]), None


def policy(rng: random.Random) -> Drawn:
    return "policy", rng.choice([f"PLC/{_d(rng, 4)}/{_d(rng, 6)}", f"{_a(rng, 3, _UP)}{_d(rng, 9)}",
                                 f"P{_d(rng, 2)}-{_d(rng, 7)}-{_a(rng, 1, _UP)}"]), None


def member(rng: random.Random) -> Drawn:
    return "member", rng.choice([f"{_a(rng, 3, _UP)}{_d(rng, 9)}", f"W{_d(rng, 9)}", f"{_d(rng, 3)}-{_d(rng, 6)}-0{_d(rng, 1)}"]), None


def claim(rng: random.Random) -> Drawn:
    return "claim", rng.choice([f"CLM{_d(rng, 10)}", f"C-{_d(rng, 2)}{_a(rng, 2, _UP)}-{_d(rng, 6)}",
                                f"{_d(rng, 3)}-{_d(rng, 5)}-{_a(rng, 2, _UP)}"]), None


def tax_ref(rng: random.Random) -> Drawn:
    return "tax_ref", rng.choice([_d(rng, 10), f"{_d(rng, 5)} {_d(rng, 5)}"]), None


def contract(rng: random.Random) -> Drawn:
    return "contract", rng.choice([f"HT{_d(rng, 8)}", f"SC-{_d(rng, 4)}-{_a(rng, 3, _UP)}-{_d(rng, 5)}"]), None


# --- financial --------------------------------------------------------------------------------------------------

_MORE_BBAN: dict[str, Callable[[random.Random], str]] = {
    "AT": lambda r: _d(r, 16), "IE": lambda r: _a(r, 4, _UP) + _d(r, 14), "SE": lambda r: _d(r, 20),
    "DK": lambda r: _d(r, 14), "FI": lambda r: _d(r, 14), "NO": lambda r: _d(r, 11), "PT": lambda r: _d(r, 21),
    "LU": lambda r: _d(r, 3) + _a(r, 13, _UP + string.digits), "DE": lambda r: _d(r, 18),
    "FR": lambda r: _d(r, 10) + _a(r, 11, _UP + string.digits) + _d(r, 2),
}


def iban_wild(rng: random.Random) -> Drawn:
    country = rng.choice(sorted(_MORE_BBAN))
    compact = v.iban(country, _MORE_BBAN[country](rng))
    return "iban", rng.choice([compact, _group(compact, (4,) * 9, " "), compact.lower()]), None


def routing(rng: random.Random) -> Drawn:
    return "routing", v.aba_value(rng).text, None


def sort_code(rng: random.Random) -> Drawn:
    return "sort_code", rng.choice(["-", " ", ""]).join(_d(rng, 2) for _ in range(3)), None


def bsb_account(rng: random.Random) -> Drawn:
    """An Australian BSB (a branch, public on its own) with the account number it leads to."""
    branch = f"{rng.choice(['01', '03', '06', '08', '73'])}{_d(rng, 1)}-{_d(rng, 3)}"
    return "bsb_account", rng.choice([f"{branch} {_d(rng, 8)}", f"{branch}/{_d(rng, 9)}"]), None


def card(rng: random.Random) -> Drawn:
    kind = rng.choice(["visa", "mc2", "jcb", "discover", "amex"])
    number = {"visa": lambda: v.luhn_complete("4" + _d(rng, 14)),
              "mc2": lambda: v.luhn_complete("2" + rng.choice("234567") + _d(rng, 13)),
              "jcb": lambda: v.luhn_complete("35" + rng.choice("2345678") + _d(rng, 12)),
              "discover": lambda: v.luhn_complete("6011" + _d(rng, 11)),
              "amex": lambda: v.luhn_complete("3" + rng.choice("47") + _d(rng, 12))}[kind]()
    sizes = (4, 6, 5) if kind == "amex" else (4, 4, 4, 4)
    return "card", rng.choice([number, _group(number, sizes, " "), _group(number, sizes, "-")]), None


def cn_bank_card(rng: random.Random) -> Drawn:
    number = v.luhn_complete(rng.choice(["622202", "621700", "622848", "621661", "622588"]) + _d(rng, rng.choice([9, 12])))
    return "cn_bank_card", rng.choice([number, _group(number, (4, 4, 4, 4, 4), " ")]), None


def pay_amount(rng: random.Random) -> Drawn:
    amount = rng.randrange(2_400, 24_000) + rng.randrange(0, 100) / 100
    text = rng.choice([f"£{amount:,.2f}", f"{amount:.2f} EUR", f"USD {amount:,.2f}", f"¥{amount:,.2f}",
                       f"{amount:,.2f}元", f"RMB{amount:.2f}"])
    return "net_pay", text, None


def gross_annual(rng: random.Random) -> Drawn:
    amount = rng.randrange(41_000, 310_000, 250)
    return "gross_annual", rng.choice([f"{amount:,}", f"${amount:,}", f"{amount / 1000:g}k", f"CNY {amount:,}"]), None


def balance(rng: random.Random) -> Drawn:
    amount = rng.randrange(100_00, 9_000_000_00) / 100
    return "balance", rng.choice([f"{amount:,.2f}", f"{amount:.2f}", f"€{amount:,.2f}"]), None


def alipay(rng: random.Random) -> Drawn:
    return "alipay", v.alipay_value(rng).text, None


# --- credentials ------------------------------------------------------------------------------------------------

def password(rng: random.Random) -> Drawn:
    words = ["Copper", "Winter", "Lantern", "Meadow", "Kodiak", "Saffron", "Glacier", "Paprika"]
    text = rng.choice([rng.choice(words) + rng.choice("!#%&*") + _d(rng, rng.choice([3, 4])),
                       _a(rng, rng.randint(5, 9)) + rng.choice("!#%^*") + _a(rng, rng.randint(5, 9)),
                       rng.choice(words).lower() + "-" + rng.choice(words).lower() + "-" + _d(rng, 2)])
    return "password", text, None


def conn_url(rng: random.Random) -> Drawn:
    scheme = rng.choice(["postgres", "mysql+pymysql", "mongodb", "rediss", "amqps", "clickhouse", "oracle"])
    pw = _a(rng, rng.randint(12, 22))
    host = rng.choice(["rm-bp1x2y.mysql.rds.aliyuncs.com", "pg-main.svc.cluster.local", "10.40.2.9", "broker.int"])
    return "conn_url", f"{scheme}://{rng.choice(['etl', 'app_rw', 'root', 'svc-billing'])}:{pw}@{host}/prod", pw


def aliyun_id(rng: random.Random) -> Drawn:
    return "aliyun_id", "LTAI" + rng.choice(["5t", "4G", "5r"]) + _a(rng, 18), None


def aliyun_secret(rng: random.Random) -> Drawn:
    return "aliyun_secret", _a(rng, 30), None


def tencent_id(rng: random.Random) -> Drawn:
    return "tencent_id", "AKID" + _a(rng, 32), None


def slack_webhook(rng: random.Random) -> Drawn:
    secret = _a(rng, 24)
    return "slack_webhook", f"https://hooks.slack.com/services/T0{_a(rng, 8, _UP + string.digits)}/B0{_a(rng, 8, _UP + string.digits)}/{secret}", secret


def whsec(rng: random.Random) -> Drawn:
    return "whsec", "whsec_" + _a(rng, 32), None


def google_key(rng: random.Random) -> Drawn:
    return "google_key", "AIza" + _a(rng, 35, _ALNUM + "-_"), None


def twilio_token(rng: random.Random) -> Drawn:
    return "twilio_token", _a(rng, 32, _HEX), None


def azure_storage(rng: random.Random) -> Drawn:
    key = base64.b64encode(rng.randbytes(64)).decode()
    return ("azure_storage", f"DefaultEndpointsProtocol=https;AccountName=st{_a(rng, 8, string.ascii_lowercase)};"
            f"AccountKey={key};EndpointSuffix=core.windows.net", key)


def dingtalk(rng: random.Random) -> Drawn:
    token = _a(rng, 64, _HEX)
    return "dingtalk", f"https://oapi.dingtalk.com/robot/send?access_token={token}", token


def wecom(rng: random.Random) -> Drawn:
    key = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return "wecom", f"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={key}", key


def basic_auth(rng: random.Random) -> Drawn:
    pair = f"{rng.choice(['deploy', 'jenkins', 'ops'])}:{_a(rng, 14)}"
    token = base64.b64encode(pair.encode()).decode()
    return "basic_auth", f"Basic {token}", token


def jwt_secret(rng: random.Random) -> Drawn:
    return "jwt_secret", _a(rng, 48, _ALNUM + "-_"), None


def mailgun(rng: random.Random) -> Drawn:
    return "mailgun", "key-" + _a(rng, 32, _HEX), None


def pem(rng: random.Random) -> Drawn:
    value = v.pem_value(rng)
    return "pem", value.text, value.core


# --- contact ----------------------------------------------------------------------------------------------------

def phone(rng: random.Random) -> Drawn:
    return "phone", v.phone_value(rng).text, None


def cn_mobile(rng: random.Random) -> Drawn:
    while True:
        national = "1" + rng.choice(["35", "38", "39", "50", "58", "86", "88", "77", "99"]) + _d(rng, 8)
        if phonenumbers.is_valid_number(phonenumbers.parse("+86" + national)):
            break
    return "phone", rng.choice([national, f"{national[:3]} {national[3:7]} {national[7:]}",
                                f"+86-{national[:3]}-{national[3:7]}-{national[7:]}", f"(+86) {national}"]), None


def email(rng: random.Random) -> Drawn:
    first, last = rng.choice(_FIRST).lower().replace("ö", "o"), rng.choice(_LAST).lower().replace("è", "e")
    domain = rng.choice(["yahoo.co.uk", "protonmail.com", "hotmail.fr", "qq.com", "126.com", "icloud.com"])
    return "email", rng.choice([f"{first}.{last}@{domain}", f"{first[0]}{last}{_d(rng, 2)}@{domain}",
                                f"{last}_{first}@{domain}".upper()]), None


_STREETS = ["Baker Street", "Calle de Alcalá", "Prinsengracht", "Sonnenallee", "Queen Street West", "Collins Street",
            "Rue Oberkampf", "Shattuck Avenue"]
_CITIES = ["London NW1 6XE", "28014 Madrid", "1016 HM Amsterdam", "12045 Berlin", "Toronto, ON M5H 2M9",
           "Melbourne VIC 3000", "75011 Paris", "Berkeley, CA 94704"]
_ZH_PLACES = ["成都市武侯区人民南路四段", "南京市鼓楼区中山北路", "武汉市洪山区珞喻路", "西安市雁塔区小寨东路",
              "重庆市渝中区解放碑民族路", "苏州市工业园区星湖街"]


def street_address(rng: random.Random) -> Drawn:
    return "address", f"{rng.randint(2, 480)} {rng.choice(_STREETS)}, {rng.choice(_CITIES)}", None


def street_address_zh(rng: random.Random) -> Drawn:
    return "address", (f"{rng.choice(_ZH_PLACES)}{rng.randint(1, 300)}号{rng.choice(['', '某某小区'])}"
                       f"{rng.randint(1, 24)}栋{rng.randint(1, 6)}单元{rng.randint(101, 3202)}室"), None


# By family, for English-language cases; Chinese cases draw from ZH_GENERATORS most of the time (see wild.py).
GENERATORS: dict[str, list[Callable[[random.Random], Drawn]]] = {
    "identity": [ssn, sin_ca, nhs, aadhaar, pan_in, nric, hkid, tfn, us_licence, dvla, ni_spaced, passport, mrz, mrn,
                 a_number, person],
    "documents": [bank_account, policy, member, claim, tax_ref],
    "financial": [iban_wild, routing, sort_code, bsb_account, card, pay_amount, gross_annual, balance],
    "credentials": [password, conn_url, aliyun_id, aliyun_secret, tencent_id, slack_webhook, whsec, google_key,
                    twilio_token, azure_storage, dingtalk, wecom, basic_auth, jwt_secret, mailgun, pem],
    "contact": [phone, email, street_address],
}
ZH_GENERATORS: dict[str, list[Callable[[random.Random], Drawn]]] = {
    "identity": [cn_id, cn_id, passport, person_zh, person_zh],
    "documents": [bank_account, policy, member, claim, tax_ref, contract],
    "financial": [cn_bank_card, pay_amount, gross_annual, balance, alipay],
    "credentials": [password, conn_url, aliyun_id, aliyun_secret, tencent_id, dingtalk, wecom, jwt_secret],
    "contact": [cn_mobile, cn_mobile, street_address_zh, email],
}
# How often each family is drawn (about the original corpus's mix).
FAMILY_WEIGHTS = {"identity": 0.3, "documents": 0.14, "financial": 0.22, "credentials": 0.17, "contact": 0.17}
