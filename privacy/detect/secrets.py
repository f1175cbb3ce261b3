"""Secret patterns: cloud keys, provider tokens, JWTs, private keys, credentialed URLs, passwords."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from privacy.detect.findings import Finding
from privacy.detect.firstchars import compile_fast


@dataclass(frozen=True)
class SecretRule:
    type: str
    pattern: re.Pattern[str]
    group: int = 0  # the capture group holding the secret (0: the whole match)


def _r(type_: str, pattern: str, group: int = 0, flags: int = 0) -> SecretRule:
    return SecretRule(type_, compile_fast(pattern, flags), group)  # the same matches, led by their first characters


_Q = r"\\{0,3}[\"']?"  # an optional quote, possibly JSON-escaped (once or twice)
_KEY_WORDS = (r"pass(?:word|wd|phrase)|pwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
              r"auth[_-]?token|access[_-]?token|refresh[_-]?token|token|credentials?|密码|口令|密钥")
_NOT_SECRET_KEY_END = re.compile(
    r"(?:file|path|env|name|type|url|len|length|count|limit|ids?|ttl|expiry|expires(?:_at|_in)?|tokens|field|"
    r"policy|min|max|hint|prompt|label|endpoint|header|usage|budget|required|strategy|rotation|manager)$",
    re.IGNORECASE)
_PLACEHOLDER_VALUES = {"true", "false", "null", "none", "required", "optional", "string", "redacted", "changeme",
                       "your_password", "password", "secret", "xxx", "xxxx", "******", "********", "****"}

RULES: tuple[SecretRule, ...] = (
    # from the BEGIN line to its END line or, in a truncated paste, to the end of the text (PGP's "KEY BLOCK" too)
    _r("PRIVATE_KEY", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                      r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"),
    _r("AWS_ACCESS_KEY", r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}(?![A-Z0-9])"),
    _r("CLOUD_SECRET_KEY", r"(?i)(?:aws_secret_access_key|aws_secret_key|secret_access_key|secretaccesskey|"
                           r"access_key_secret|accesskeysecret|secret_key|secretkey)" + _Q + r"\s*[:=]\s*" + _Q +
                           r"([A-Za-z0-9/+=]{30,64})", 1),
    _r("CLOUD_ACCESS_KEY", r"(?<![A-Za-z0-9])(?:LTAI[0-9A-Za-z]{12,24}|AKID[0-9A-Za-z]{32})(?![A-Za-z0-9])"),
    _r("GOOGLE_API_KEY", r"(?<![A-Za-z0-9])AIza[0-9A-Za-z\-_]{35}(?![A-Za-z0-9\-_])"),
    _r("GOOGLE_OAUTH_TOKEN", r"(?<![A-Za-z0-9])ya29\.[0-9A-Za-z\-_]{20,}"),
    _r("GITHUB_TOKEN", r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    _r("GITLAB_TOKEN", r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9\-_]{20,}"),
    _r("SLACK_TOKEN", r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9\-]{10,}"),
    _r("SLACK_WEBHOOK", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    _r("ANTHROPIC_KEY", r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_\-]{20,}"),
    _r("OPENAI_KEY", r"(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    _r("STRIPE_KEY", r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    _r("JWT", r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    _r("DB_PASSWORD", r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@\"'\\]*:([^\s@\"'\\/]+)@", 1),
    _r("NPM_TOKEN", r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    _r("SENDGRID_KEY", r"(?<![A-Za-z0-9])SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{32,64}"),
    _r("HUBSPOT_TOKEN", r"(?i)(?<![A-Za-z0-9])pat-(?:na|eu|ap)\d-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                        r"[0-9a-f]{12}"),
    _r("STRIPE_WEBHOOK_SECRET", r"(?<![A-Za-z0-9])whsec_[A-Za-z0-9+/=]{24,}"),
    _r("SALESFORCE_TOKEN", r"(?<![A-Za-z0-9])00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{40,}"),
    _r("TWILIO_KEY", r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"),
    _r("SHOPIFY_TOKEN", r"(?<![A-Za-z0-9])shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
    _r("PYPI_TOKEN", r"(?<![A-Za-z0-9])pypi-[A-Za-z0-9_\-]{50,}"),
    _r("HUGGINGFACE_TOKEN", r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])"),
    _r("DISCORD_WEBHOOK", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{20,}"),
    # Azure storage / service-bus / event-hub connection strings and SAS URLs: the key inside.
    _r("AZURE_KEY", r"(?i)(?:AccountKey|SharedAccessKey|SharedAccessSignature)=([A-Za-z0-9+/=%]{20,})", 1),
    _r("AZURE_KEY", r"(?i)[?&]sig=([A-Za-z0-9+/=%]{20,})", 1),
    # Chat-bot webhooks whose key is in the URL (WeCom, DingTalk, Feishu/Lark, Slack workflow, Teams).
    _r("WEBHOOK_KEY", r"(?i)/(?:webhook|hook|robot)s?/[A-Za-z0-9/_\-]*?(?:send|v2/hook/)?\??"
                      r"(?:[A-Za-z0-9_]+=[^&\s\"']*&)*(?:key|access_token|token|secret)=([A-Za-z0-9\-_]{16,})", 1),
    _r("WEBHOOK_KEY", r"(?i)open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/([A-Za-z0-9\-]{16,})", 1),
    _r("MAILGUN_KEY", r"(?<![A-Za-z0-9])key-[0-9a-f]{32}(?![A-Za-z0-9])"),
    _r("BEARER_TOKEN", r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)", 1),
    _r("BASIC_AUTH", r"(?i)\bbasic\s+([A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])", 1),
)

# Code, not a secret: a dotted name or call (``os.environ.get``, ``args.api_key``, ``load()``), a class name.
CODE_VALUE = re.compile(r"^(?:[A-Za-z_]+(?:\.[A-Za-z_]+)+(?:\(.*)?|\w+\(.*|[A-Z][a-z]+(?:[A-Z][a-z]+)+)$")
# A key is a whole run of key characters (a Chinese key word counts as one) holding a key word, read from the run's
# start only: a pattern that let the key word float inside the run tried every start of a long dotted run (a JWT,
# a path) and read it to its end from each, twice over — quadratic (issue 37).
_KEY_CHAR = r"(?:[A-Za-z0-9_.\-]|密码|口令|密钥)"
_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9_.\-])(?<!密码)(?<!口令)(?<!密钥)(?=" + _KEY_CHAR + r"*?(?:" + _KEY_WORDS + r"))(" + _KEY_CHAR
    + r"+)" + _Q + r"[ \t]*(?:[:=]|：|=>)[ \t]*" + _Q + r"([^\s\"'\\,;}{\]\[<>`]{4,200})")


_KEY_WORD = compile_fast(r"(?i)(?:" + _KEY_WORDS + r")")
_ASCII_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_CJK_KEY_WORDS = frozenset({"密码", "口令", "密钥"})


def _run_start(text: str, at: int) -> int:
    """Where the run of key characters holding ``at`` begins (a Chinese key word is one key character)."""
    while True:
        if at > 0 and text[at - 1] in _ASCII_KEY_CHARS:
            at -= 1
        elif at > 1 and text[at - 2:at] in _CJK_KEY_WORDS:
            at -= 2
        else:
            return at


def assignments(text: str) -> Iterator[re.Match[str]]:
    """``_ASSIGNMENT.finditer(text)``, tried only where a match can begin: a match begins where a run of key
    characters does (its lookbehinds) and that run holds a key word (its lookahead), so the key words are found
    first (~1 ms on 20 KB) and the pattern is tried at the start of their runs alone, instead of at every letter
    of the text (~15 ms)."""
    end = 0
    for start in sorted({_run_start(text, m.start()) for m in _KEY_WORD.finditer(text)}):
        if start < end:
            continue
        m = _ASSIGNMENT.match(text, start)
        if m is not None:
            end = m.end()
            yield m


class SecretDetector:
    def find(self, text: str) -> list[Finding]:
        out: list[Finding] = []
        for rule in RULES:
            for m in rule.pattern.finditer(text):
                start, end = m.span(rule.group)
                value = text[start:end]
                out.append(Finding(type=rule.type, start=start, end=end, value=value, layer="secrets",
                                   key=f"{rule.type}:{value}"))
        for m in assignments(text):
            key, value = m.group(1), m.group(2)
            if _NOT_SECRET_KEY_END.search(key) or value.lower() in _PLACEHOLDER_VALUES or value.startswith("$") \
                    or CODE_VALUE.match(value):
                continue
            if value.isdigit() and len(value) < 6:
                continue
            start, end = m.span(2)
            out.append(Finding(type="PASSWORD", start=start, end=end, value=value, layer="secrets",
                               key=f"PASSWORD:{value}"))
        return out


_CREDENTIAL_WORD = re.compile(r"(?:^|_)(?:PASSWORD|PASSWD|PWD|PASSPHRASE|SECRET|TOKEN|KEY|PIN|CREDENTIALS?|OTP|"
                              r"WEBHOOK|AUTH)(?:_|$)")


def is_credential_type(type_: str) -> bool:
    """Whether a placeholder type names a credential or key (this layer's types, and a listed unit's field such as
    ``password``, ``api_key`` or ``pin``) rather than a name, an address or an id."""
    return type_ in _CREDENTIAL_TYPES or bool(_CREDENTIAL_WORD.search(type_))


_CREDENTIAL_TYPES = frozenset({rule.type for rule in RULES} | {"PASSWORD", "ACCESS_CODE", "CARD_SECURITY_CODE"})
