"""Label understanding: what a key, column or field label names, read from its words.

A label is split into words (snake, camel, kebab, spaces, dots, ``#``, ``no.``; Chinese by the longest known word),
and the words are read against a lexicon of stems and abbreviations per concept, English and Chinese. A label names
a value when its last word does (labels are head-final in both languages): a concept word (``passport``, ``funds``,
``住址``), a word that refers to an identifier (``ref``, ``no``, ``#``, ``id``, ``编号``) after a concept word
(``acct_ref``, ``病案号``), or an amount word (``total``) after a pay word (``comp_total``). A last word that names
something else (``date``, ``type``, ``path``, ``count``…) or a word the lexicon does not know makes the label name
nothing, so ``order_id``, ``build_number``, ``passport_expiry`` and ``file_name`` stay ordinary. The types come out in
the order their value shapes should be tried (``customer``: a name, else an account id).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Concept → the entity types a value under it may be, in the order their shapes are tried.
CONCEPTS: dict[str, tuple[str, ...]] = {
    "passport": ("PASSPORT",),
    "licence": ("DRIVERS_LICENSE",),
    "national_id": ("NATIONAL_ID",),
    "medical": ("MEDICAL_RECORD",),
    "routing": ("ROUTING_NUMBER",),
    "iban": ("IBAN_CODE",),
    "card": ("CREDIT_CARD", "ACCOUNT_NUMBER"),  # a membership or loyalty card number too
    "account": ("ACCOUNT_NUMBER",),
    "amount": ("AMOUNT",),
    "alipay": ("ALIPAY_ACCOUNT",),
    "phone": ("PHONE_NUMBER",),
    "email": ("EMAIL_ADDRESS",),
    "secret": ("PASSWORD",),
    "token": ("API_TOKEN",),
    "cvv": ("CARD_SECURITY_CODE",),
    "access_code": ("ACCESS_CODE", "PASSWORD"),  # a PIN, a one-time or verification code; a long passcode
    "security_code": ("CARD_SECURITY_CODE", "ACCESS_CODE"),  # a card's three or four digits, else an account's
    "person": ("PERSON",),
    "address": ("LOCATION",),
    # words that may name a person or that person's identifier
    "customer": ("PERSON", "ACCOUNT_NUMBER"),
    "patient": ("PERSON", "MEDICAL_RECORD"),
    "contact": ("PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS"),
}
# The identifier a concept word refers to when an id word follows it (``customer_no``, ``contact_no``).
_ID_OF = {"customer": "account", "patient": "medical", "contact": "phone", "person": "account", "amount": "account",
          "address": "address", "email": "email", "phone": "phone"}

_EN: dict[str, str] = {}


def _add(concept: str, words: str) -> None:
    for word in words.split():
        _EN[word] = concept


_add("passport", "passport passports pp ppt pport psprt mrz travelpass visa")
_add("licence", "licence license licenses licences lic dl dln dvla driver drivers driving driverlicense "
                "driverslicense permit")
_add("national_id", "ssn sin nino ni nin citizen resident tin itin taxpayer aadhaar alien uscis immigration "
                    "identity identification anumber natid nationalid cnid idcard hkid greencard utr tfn nric aadhar uidai "
                    "taxref hkic ic nricfin")
_add("medical", "mrn medical chart health nhs ehr emr hospital hosp admission")
_add("patient", "patient")
_add("routing", "routing aba rtn transit bsb swift bic sortcode sort bankcode clearing")
_add("iban", "iban")
_add("card", "card cc pan cardnumber creditcard debitcard unionpay")
_add("account", "account acct acc accnt accts accounts policy pol membership mbr case claim contract "
                "loan mortgage subscriber loyalty insurance folio dossier docket")
_add("customer", "customer cust client member")
_add("amount", "salary salaries sal comp compensation pay payroll wage wages income bonus balance bal funds fund "
               "earnings remuneration networth savings stipend pension allowance commission payout deposit assets "
               "holdings wealth ctc")
_add("alipay", "alipay wechatpay")
_add("phone", "phone phones tel telephone mobile mob cell cellphone fax whatsapp landline msisdn reach")
_add("contact", "contact")
_add("email", "email emails mail mailto")
_add("token", "auth authorization authtoken")
_add("secret", "password passwords passwd pwd pw pass passphrase secret secrets credential "
               "credentials cred creds token apikey privatekey mnemonic webhook sk connstr requirepass masterauth")
_add("access_code", "pin pins passcode otp totp hotp")
_add("security_code", "securitycode")
_add("cvv", "cvv cvc cvv2 cvc2 csc")
_add("person", "name names fullname surname forename firstname lastname person holder owner beneficiary "
               "recipient payee payer insured policyholder cardholder applicant guardian spouse employee emp "
               "staff sender signatory traveller traveler passenger claimant debtor borrower guarantor cosigner "
               "nominee dependent dependant addressee consignee attn")
_add("address", "address addresses addr adr street residence residential domicile home abode dwelling house apartment "
                "apt")

_ID_WORDS = frozenset("id ids no nr num nbr number numbers # code identifier record rec key ref reference refno "
                      "registration reg line ident".split())
_AMOUNT_TAIL = frozenset("total amount amt sum value gross net ytd annual monthly base available avail current "
                         "due outstanding yr yearly".split())
_QUALIFIERS = frozenset("the of a an to from my your his her their our primary secondary main personal private "
                        "full legal given bank login user s on at for in me uk us usa cn prc sg hk au nz ca eu "
                        "eur usd gbp cny rmb jpy chf inr sgd aud cad hkd"
                        .split())
# A last word naming something about the value, not the value: a label ending in one names nothing.
_NEGATIVE = frozenset(
    "date dt time timestamp ts expiry exp expires expiration expired issued issue issuer country countries type "
    "kind status state file files path dir url uri link count cnt len length format fmt hash hashed mask masked "
    "last4 prefix suffix template pattern example regex field column col label schema version ver port host "
    "hostname size limit max min timeout ttl rotation manager env header hint prompt endpoint usage budget "
    "required strategy valid verified enabled flag tokens currency method frequency period schedule "
    "rate provider vendor bank office city region zip postcode postal scope scopes algorithm alg mode level "
    "source target id_type verify check checked index idx offset page desc description note notes".split())
# Words that, before ``name``, make it something other than a person's name.
_NOT_PERSON = frozenset("file user host tool function func model display bucket db database service app project "
                        "branch repo package company org organization organisation bank product brand class "
                        "module table column field key env var variable domain server node container image "
                        "task job queue topic device team group role street city".split())
# Words that, before ``address``, make it something other than a street address.
_NOT_STREET = frozenset("ip mac memory wallet web server bind listen remote host base return contract proxy "
                        "gateway network net socket email mail ipv4 ipv6 hardware physical virtual".split())
# Two words read as one (``national insurance``, ``sort code``, ``api key``).
_PAIRS: dict[tuple[str, str], str] = {
    ("travel", "doc"): "passport", ("travel", "document"): "passport", ("travel", "documents"): "passport",
    ("machine", "readable"): "mrz", ("national", "insurance"): "nino", ("nat", "ins"): "nino",
    ("social", "security"): "ssn", ("id", "card"): "idcard", ("identity", "card"): "idcard",
    ("identity", "document"): "idcard", ("national", "id"): "natid", ("tax", "id"): "tin", ("tax", "no"): "tin",
    ("tax", "number"): "tin", ("tax", "reference"): "tin", ("tax", "ref"): "tin",
    ("tax", "file"): "tin", ("connection", "string"): "connstr", ("sort", "code"): "sortcode", ("bank", "code"): "bankcode",
    ("net", "worth"): "networth", ("take", "home"): "salary", ("takehome", "pay"): "salary", ("wechat", "pay"): "wechatpay", ("weixin", "pay"): "wechatpay",
    ("a", "c"): "acct", ("e", "mail"): "email", ("pass", "phrase"): "passphrase", ("pass", "word"): "password",
    ("pass", "code"): "passcode", ("pin", "code"): "pin", ("zip", "code"): "zip", ("post", "code"): "zip",
    ("postal", "code"): "zip", ("area", "code"): "zip", ("country", "code"): "country",
    ("first", "name"): "firstname", ("last", "name"): "lastname", ("given", "name"): "firstname",
    ("family", "name"): "surname", ("full", "name"): "fullname", ("middle", "name"): "fullname",
    ("maiden", "name"): "surname", ("legal", "name"): "fullname", ("card", "number"): "cardnumber",
    ("medical", "record"): "mrn", ("health", "record"): "mrn", ("patient", "record"): "mrn",
    ("med", "rec"): "mrn", ("chart", "number"): "mrn", ("driver", "license"): "driverlicense",
    ("private", "key"): "privatekey", ("credit", "card"): "creditcard", ("debit", "card"): "debitcard",
    ("green", "card"): "greencard", ("branch", "code"): "bankcode", ("security", "code"): "securitycode",
    ("recovery", "code"): "otp", ("one", "time"): "onetime", ("seed", "phrase"): "mnemonic", ("visa", "card"): "creditcard",
}
# Codes that open an account or confirm a login: a one-time, verification or access code (``one-time code``: two
# merges, ``one time`` first).
for _word in ("onetime", "verification", "verify", "access", "auth", "authentication", "authorization", "login",
              "sms", "mfa", "otp", "pin"):
    _PAIRS[(_word, "code")] = "otp"
for _word in ("password", "passcode", "pin", "pass"):
    _PAIRS[("onetime", _word)] = "otp"
for _word in "api secret access signing deploy ssh encryption master client app license licence auth".split():
    _PAIRS[(_word, "key")] = "apikey"
for _word in ("call", "text", "contact", "ring"):
    _PAIRS[(_word, "me")] = "reach"
for _word in "access auth refresh bearer session api".split():
    _PAIRS[(_word, "token")] = "token"
for _word in _NOT_PERSON:
    _PAIRS.setdefault((_word, "name"), "othername")
for _word in ("key", "order", "by", "field", "column"):  # ``sort_key``: a database's, not a bank's sort code
    _PAIRS[("sort", _word)] = "othername"
_EN.update({"mrz": "passport", "idcard": "national_id", "natid": "national_id", "tin": "national_id",
            "mrn": "medical", "zip": "", "country": "", "othername": ""})
_NEGATIVE_WORDS = _NEGATIVE | {"zip", "country", "othername"}

# Chinese: concept words, id words, amount tails, qualifiers and negatives (longest match first).
_ZH: dict[str, str] = {}


def _zh(concept: str, words: str) -> None:
    for word in words.split():
        _ZH[word] = concept


_zh("passport", "护照 机读 机读区 机读码 旅行证件 通行证")
_zh("licence", "驾照 驾驶证 驾驶执照 驾驶 驾证 行驶证")
_zh("national_id", "社会安全 阿达哈尔 身份证 身份 证件 居民身份证 社保 社会保障 社会保险 国民保险 移民 外国人 纳税人 税号 公民 居民 "
                   "绿卡 个税 纳税")
_zh("medical", "病历 病案 住院 医保 就诊 门诊 医疗 健康")
_zh("patient", "患者 病人")
_zh("routing", "路由 路线 汇款路线 银行代码 行号 联行号 银行识别码 分行代码 清算号 转账代码")
_zh("iban", "国际银行账号 国际银行帐号")
_zh("card", "卡号 银行卡 信用卡 借记卡 储蓄卡 银联卡")
_zh("account", "账号 帐号 账户 帐户 户号 保单 保险单 投保 参保 报案 会员 案件 案号 合同 协议 贷款 参考 理赔 订阅 保险 索赔 档案 卷宗 "
               "案卷 公积金 社保卡")
_zh("customer", "客户 用户")
_zh("amount", "工资 薪资 薪水 薪酬 年薪 月薪 余额 资金 收入 奖金 存款 报酬 资产 酬劳 津贴 待遇 结余 佣金 提成 年终奖 实发 应发 到手 税前 税后")
_zh("alipay", "支付宝 微信支付")
_zh("phone", "电话 手机 座机 传真 联络 电话号 手机号")
_zh("contact", "联系")
_zh("email", "邮箱 电邮 邮件 电子邮件 电子邮箱")
_zh("secret", "密码 口令 密钥 令牌 凭证 凭据 暗号 秘钥 私钥 助记词")
_zh("access_code", "验证码 校验码 动态码 动态密码 动态口令 短信码 授权码 取件码 取货码 提货码 激活码 一次性密码 一次性验证码 "
                   "支付码")
_zh("security_code", "安全码")
_zh("person", "姓名 名字 名称 联系人 收件人 收货人 寄件人 发件人 持卡人 户主 员工 申请人 受益人 投保人 被保险人 "
              "开户人 户名 持有人 乘客 本人 雇员 职员 收款人 付款人 当事人 借款人 担保人 被保人 监护人 配偶 家属 "
              "就诊人 客户名 客户名称 员工姓名 用户姓名")
_zh("address", "地址 住址 住所 居所 居住地 住处 户籍 家庭住址 通讯地址 收货地址 寄送地址 邮寄地址 住宅 寓所 门牌 所在地")
_ZH_ID = frozenset("号 号码 编号 码 编码 代码 识别码 识别号 标识 证号 记录 登记 注册 登记号 注册号".split())
_ZH_AMOUNT_TAIL = frozenset("总额 金额 总计 合计 总数 数额".split())
_ZH_QUALIFIERS = frozenset("的 登录 个人 主 家庭 常用 英国 美国 中国 当前 可用 银行".split())
_ZH_NEGATIVE = frozenset("日期 时间 类型 状态 国家 国籍 有效期 到期 过期 签发 文件 路径 数量 格式 长度 模板 示例 "
                         "说明 备注 版本 端口 机关 用户名".split())

_ZH_ALL = sorted(set(_ZH) | _ZH_ID | _ZH_AMOUNT_TAIL | _ZH_QUALIFIERS | _ZH_NEGATIVE, key=len, reverse=True)
# Words that may start or continue a label phrase in free text (a negative word ends a phrase: the connector
# must follow the phrase, so ``passport expiry: …`` finds nothing).
_ZH_PHRASE = sorted(set(_ZH) | _ZH_ID | _ZH_AMOUNT_TAIL | _ZH_QUALIFIERS, key=len, reverse=True)
_EN_PHRASE = sorted((set(_EN) | _ID_WORDS | _AMOUNT_TAIL
                     | (_QUALIFIERS - {"the", "of", "a", "an", "to", "from", "s", "on", "at", "for", "in", "me"})
                     | {w for pair, v in _PAIRS.items() if v not in _NEGATIVE_WORDS for w in pair})
                    - _NEGATIVE_WORDS - {"#", "a", "e", "s", "c", "word", ""}
                    | {f"{first}{sep}{second}" for first, second in (("tax", "file"), ("one", "time"))
                       for sep in (" ", "_", "-", "")}
                    | {f"{verb}{sep}me{sep}at" for verb in ("reach", "call", "text", "contact", "ring")
                       for sep in (" ", "_", "-")}, key=len, reverse=True)


class Lexicon:
    """Compiled once per detector: splits labels and reads what they name; finds label phrases in free text."""

    def __init__(self) -> None:
        self._split = re.compile(r"#|[0-9]+|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[\u3400-\u9fff]+")
        self._zh = re.compile("|".join(map(re.escape, _ZH_ALL)))
        en = trie_pattern(_EN_PHRASE)
        # A label phrase in free text: lexicon words joined by separators, camel case or nothing, then an
        # optional ``#``. Chinese words need no boundary.
        word = (r"(?:(?-i:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z]))(?:" + en + r"|a[ _\-]?(?=(?:number|no|num|nr|#)))"
                r"(?-i:(?![a-z]))|" + trie_pattern(_ZH_PHRASE) + ")")
        self.phrase = re.compile(word + r"(?:[ \t_\-./]{0,2}(?:" + word + r"|#))*(?:\.|[_\-](?:to|from)\b)?",
                                 re.IGNORECASE)

    def words(self, label: str) -> list[str]:
        """The label's words, lower case; Chinese runs split by the longest known word."""
        out: list[str] = []
        for piece in self._split.findall(label):
            if "\u3400" <= piece[0] <= "\u9fff":
                pos = 0
                for m in self._zh.finditer(piece):
                    if m.start() > pos:
                        out.append("?" + piece[pos:m.start()])
                    out.append(m.group(0))
                    pos = m.end()
                if pos < len(piece):
                    out.append("?" + piece[pos:])
            elif not piece.isdigit():
                out.append(piece.lower())
        return _merged(out)

    def types(self, label: str, before: str = "") -> tuple[str, ...]:
        """The entity types a value under ``label`` may be, in the order to try; () when it names nothing.
        ``before``: a word joined to the label in the text (``order`` in ``order ref``), read as its first word."""
        words = self.words(label)
        if before:
            words = _merged([w for w in self.words(before)[-1:]] + words)
        return read(words)


def trie_pattern(words: Sequence[str]) -> str:
    """One alternation for many words, factored by common prefix (the regex engine gives up at the first letter
    that starts no word instead of trying every word in turn)."""
    trie: dict[str, dict] = {}  # type: ignore[type-arg]
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node: dict) -> str:  # type: ignore[type-arg]
        ends = "" in node
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return "(?:" + body + ")?" if ends else body

    return "(?:" + pattern(trie) + ")"


def _merged(words: list[str]) -> list[str]:
    """``words`` with each known pair read as one word, again until none is left (``one time`` then ``code``)."""
    merged = _merged_once(words)
    while len(merged) < len(words):
        words, merged = merged, _merged_once(merged)
    return merged


def _merged_once(words: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        pair = _PAIRS.get((words[i], words[i + 1])) if i + 1 < len(words) else None
        if pair is None and i == 0 and words[i] == "a" and i + 1 < len(words) and words[i + 1] in _ID_WORDS:
            pair = "anumber"
        if pair is not None:
            out.append(pair)
            i += 2
        else:
            out.append(words[i])
            i += 1
    return out


def _concept(word: str) -> str | None:
    return _EN.get(word) or _ZH.get(word) or None


def _is_id(word: str) -> bool:
    return word in _ID_WORDS or word in _ZH_ID


def _is_qualifier(word: str) -> bool:
    return word in _QUALIFIERS or word in _ZH_QUALIFIERS


def read(words: Sequence[str]) -> tuple[str, ...]:
    """What a label made of ``words`` names (see the module doc)."""
    words = [w for w in words if not _is_qualifier(w)]
    while words and words[-1] in ("to", "from"):
        words.pop()
    if not words:
        return ()
    head = words[-1]
    if head in _NEGATIVE_WORDS or head in _ZH_NEGATIVE:
        return ()
    concept = _concept(head)
    before = words[-2] if len(words) >= 2 else None
    if concept == "address" and before is not None and before in _NOT_STREET:
        return ("EMAIL_ADDRESS",) if _concept(before) == "email" else ()
    if concept == "person" and head in ("name", "names", "名称", "名") and before is not None \
            and _concept(before) not in (None, "person", "customer", "patient", "contact", "account", "card"):
        return ()
    if concept is not None:
        return CONCEPTS[concept]
    tail_amount = head in _AMOUNT_TAIL or head in _ZH_AMOUNT_TAIL
    if tail_amount and any(w in ("gross", "net") for w in words[:-1]):
        return CONCEPTS["amount"]  # ``gross_annual``, ``net_amount``: pay words made of amount tails alone
    if _is_id(head) or tail_amount:
        for word in reversed(words[:-1]):
            if _is_id(word) or word in _AMOUNT_TAIL or word in _ZH_AMOUNT_TAIL:
                continue
            owner = _concept(word)
            if owner is None and word.startswith("?") and len(word) <= 3:
                continue  # a Chinese word the lexicon does not know, between the concept and its id word
            if owner is None:
                return ()
            if tail_amount:
                return CONCEPTS["amount"] if owner == "amount" else ()
            return CONCEPTS[_ID_OF.get(owner, owner)]
        if not tail_amount and words[0] in ("ref", "reference"):
            return CONCEPTS["account"]
    return ()
