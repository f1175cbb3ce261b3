"""Links, paths and handles, masked at the segment that identifies someone: the user in ``C:\\Users\\<name>\\``,
``/home/<user>/`` and ``/Users/<user>/`` (``USERNAME``), the user part of a profile or repository URL
(``github.com/<user>/``, ``linkedin.com/in/<user>``, ``youtube.com/@<user>``, ``/u/<user>/`` in an access log,
``?user=<user>``; ``USERNAME``), a handle (``@name``; ``USERNAME``), the name inside an app or package id
(``com.<name>.<app>`` where the text says it is one, or the name is a person's; ``APP_ID``) and a personal site
(a domain built from a given name, or the one a user calls their site; ``URL``). The rest of the path or URL stays,
so the cloud still reads ``Desktop\\test.txt``. In ``strict`` every domain outside a short public list is a ``URL``
and every app id with a segment of its own an ``APP_ID``. Each found value is found again wherever it recurs in
the text (``lucasferreira93/tcc.git denied to lucasferreira93``). Bounded patterns: linear in the text."""

from __future__ import annotations

import re
from collections.abc import Iterator

from privacy.detect.findings import Finding
from privacy.detect.firstchars import compile_fast
from privacy.detect.given_names import GivenNames

LAYER = "links"

_GENERIC_USERS = frozenset("""public default all users shared admin administrator user users root guest ubuntu runner
vscode node app ec2-user centos debian pi docker jenkins git www-data nobody me you username your_name yourname
your-name name user1 test demo example home runneradmin circleci travis gitpod codespace agent agents workspace
ws project projects dev work data src build ci deploy service""".split())
_WIN_PATH = compile_fast(r"(?i)\b[A-Z]:(?:\\{1,2}|/)(?:Users|Documents and Settings)(?:\\{1,2}|/)"
                       r"([^\\/:*?\"<>|\r\n]{1,64}?)(?=\\|/)")
_WIN_PATH_END = compile_fast(r"(?i)\b[A-Z]:(?:\\{1,2}|/)(?:Users|Documents and Settings)(?:\\{1,2}|/)"
                           r"([^\\/:*?\"<>|\s']{1,64})")
_UNIX_PATH = compile_fast(r"(?<![\w.\-])/(?:home|Users|mnt/home|export/home|var/home)/([^/\s\"'<>:;,`|]{1,64})")
_URL_USER = compile_fast(
    r"(?i)(?<![\w.\-])(?:https?://)?(?:www\.|m\.)?(?:github\.com|gitlab\.com|bitbucket\.org|gitee\.com|codeberg\.org|"
    r"twitter\.com|x\.com|instagram\.com|facebook\.com|fb\.com|tiktok\.com|threads\.net|t\.me|medium\.com|dev\.to|"
    r"behance\.net|dribbble\.com|huggingface\.co|kaggle\.com|leetcode\.com|pinterest\.com|reddit\.com|youtube\.com|"
    r"twitch\.tv|soundcloud\.com|linkedin\.com|vk\.com|weibo\.com|zhihu\.com|bilibili\.com|xing\.com|npmjs\.com)"
    r"[/:](?:(?:in|pub|u|user|users|people|c|channel|profile|~)/)?@?([A-Za-z0-9][A-Za-z0-9._\-]{0,60})")
_NOT_A_USER = frozenset("""orgs org settings features about login logout signup join search topics marketplace explore
sponsors apps watch results feed shorts playlist embed hashtag share intent home i p reel reels status jobs company
pulls issues notifications new trending collections events pricing enterprise team blog docs help legal security
site policies terms privacy r""".split())
_SITE_USER = compile_fast(r"(?i)(?<![\w.\-])([a-z0-9][a-z0-9\-]{1,38})\.github\.io\b")
_PATH_USER = compile_fast(r"(?<=/)(?:u|user|users|account|accounts|profile|profiles|people|member|members|~)/"
                        r"([A-Za-z0-9][A-Za-z0-9._\-]{1,40})(?=[/?#\s\"']|$)")
_QUERY_USER = compile_fast(r"(?i)[?&](?:user|username|login|uid|user_id|userid|author|owner|handle)="
                         r"([^&\s\"'#]{2,64})")
_QUOTED_USER = compile_fast(r"(?i)\b(?:user(?:name)?|login|account)[ \t]+[\"'`]([^\"'`\s]{2,40})[\"'`]")
_AT_HOST = compile_fast(r"(?i)\b(?:for|user|login|as|by)[ \t]+([A-Za-z][A-Za-z0-9._\-]{1,40})@"
                      r"(?=\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b|localhost\b)")
_HANDLE = compile_fast(r"(?<![\w@./\-])@([A-Za-z0-9_](?:[A-Za-z0-9_.]{0,28}[A-Za-z0-9_])?)(?![\w@/(])")
_NOT_A_HANDLE = frozenset("here channel everyone all param return returns override property staticmethod "
                          "classmethod dataclass types media import".split())
_TLDS = (r"com|org|net|io|ru|de|cn|fr|uk|me|dev|app|edu|br|pl|in|it|es|nl|se|jp|kr|co|tech|ai|xyz|ch|at|be|"
         r"cz|dk|fi|no|pt|tr|ua|vn|id|my|sg|au|ca|mx|ar|cl|za|ng|ke|eg|ir|il|gr|hu|ro|bg|sk")
_APP_ID = compile_fast(r"(?<![\w.\-])(?:" + _TLDS + r")\.((?:[a-z0-9_]+\.){1,3})[A-Za-z0-9_]+(?![\w\-])"
                     r"(?!\.[a-z])")
_APP_CONTEXT = compile_fast(r"(?i)(?:package|applicationid|application id|namespace|bundle|app id|appid|apk|"
                          r"play console|app store|package name|packagename|\bapp\b)[^\n]{0,40}$")
_GENERIC_SEGMENTS = frozenset("""google android androidx example mycompany company yourcompany facebook microsoft apple
amazon amazonaws squareup fasterxml apache springframework jetbrains github gitlab mozilla eclipse oracle sun ibm
intellij twitter netflix airbnb alibaba tencent baidu huawei xiaomi samsung react reactnative facebook expo flutter
unity unity3d test demo sample app myapp hello helloworld mycompanyname acme internal api core util utils common
java javax kotlin kotlinx jakarta gradle maven junit""".split())
_DOMAIN = compile_fast(r"(?i)(?<![\w@./\-])((?:https?://)?(?:www\.)?)([a-z0-9][a-z0-9\-]{1,40})\.(" + _TLDS +
                     r"|design|site|page|blog|art|studio|info)(?![\w\-]|\.[a-z])")
_STRONG_TLDS = frozenset("com net org io dev de cn fr pl uk ru ca au br jp es nl design blog".split())
_SITE_CONTEXT = compile_fast(r"(?i)(?:my (?:site|website|web site|page|homepage|home page|blog|portfolio|shop|store)|"
                           r"portfolio|website|homepage|blog)[ \t]*(?:is|:|=|at|-)?[ \t]*$")
_PUBLIC_HOSTS = frozenset("""google github gitlab bitbucket stackoverflow stackexchange python pypi npmjs wikipedia
youtube microsoft apple amazon amazonaws linkedin twitter x facebook instagram reddit medium openai anthropic
localhost example w3 mozilla readthedocs docker kubernetes golang rust-lang nodejs reactjs vuejs angular ubuntu
debian redhat apache nginx cloudflare heroku vercel netlify digitalocean azure office live outlook gmail yahoo
hotmail icloud whatsapp telegram slack zoom discord notion figma canva spotify netflix paypal stripe shopify
baidu qq weixin taobao tmall jd aliyun alibaba tencent bilibili zhihu weibo huggingface kaggle arxiv
googleapis gstatic jsdelivr unpkg cdnjs mit harvard stanford ox cam bbc cnn nytimes gov europa who""".split())

# Each pattern with the substrings one of which any match holds.
_USER_PATTERNS = ((_WIN_PATH, (":\\", ":/")), (_WIN_PATH_END, (":\\", ":/")), (_UNIX_PATH, ("/",)),
                  (_URL_USER, (".",)), (_SITE_USER, (".github.io", ".GITHUB.IO", ".GitHub.io")), (_PATH_USER, ("/",)),
                  (_QUERY_USER, ("=",)), (_QUOTED_USER, ('"', "'", "`")), (_AT_HOST, ("@",)))


def _recurring(text: str, value: str) -> Iterator[int]:
    """The starts of ``value`` in ``text`` not inside a longer run of letters and digits."""
    pos = text.find(value)
    while pos >= 0:
        before = text[pos - 1] if pos else " "
        after = text[pos + len(value)] if pos + len(value) < len(text) else " "
        if not before.isalnum() and not after.isalnum():
            yield pos
        pos = text.find(value, pos + 1)


class LinkSegments:
    """``find(text, strict)``: the identifying segments of the paths, URLs, handles and app ids in a text."""

    _MAX_RECURRING = 32  # distinct values searched again in one text (each search is linear)

    def __init__(self, given: GivenNames) -> None:
        self._given = given

    def _named(self, word: str) -> bool:
        """Whether a run of letters begins with a given name of four letters or more and goes on after it."""
        letters = re.match(r"[a-z]+", word.casefold())
        if letters is None:
            return False
        run = letters.group(0)
        return any(self._given.known(run[:n]) for n in range(min(len(run) - 3, 9), 3, -1))

    def find(self, text: str, *, strict: bool) -> list[Finding]:
        spans: list[tuple[str, int, int]] = []
        for pattern, needs in _USER_PATTERNS:
            if not any(n in text for n in needs):
                continue  # a substring test is ~100x cheaper than a pattern's scan
            for m in pattern.finditer(text):
                user = m.group(1).strip()
                if pattern is _URL_USER and user.casefold() in _NOT_A_USER:
                    continue
                if user and user.casefold() not in _GENERIC_USERS and not user.startswith(("$", "%", "{", "<")):
                    spans.append(("USERNAME", m.start(1), m.start(1) + len(user)))
        for m in _HANDLE.finditer(text) if "@" in text else ():
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start:m.start()].strip() == "" or m.group(1).casefold() in _NOT_A_HANDLE:
                continue  # a decorator in code, or a broadcast mention
            spans.append(("USERNAME", m.start(1), m.end(1)))
        dotted = "." in text
        for m in _APP_ID.finditer(text) if dotted else ():
            middle = m.group(1).rstrip(".")
            segments = middle.split(".")
            if all(s.casefold() in _GENERIC_SEGMENTS for s in segments):
                continue
            if strict or _APP_CONTEXT.search(text, max(0, m.start() - 48), m.start()) \
                    or any(self._named(s) for s in segments):
                spans.append(("APP_ID", m.start(1), m.start(1) + len(middle)))
        for m in _DOMAIN.finditer(text) if dotted else ():
            label, tld = m.group(2), m.group(3).casefold()
            if label.casefold() in _PUBLIC_HOSTS:
                continue
            personal = self._named(label) or label.casefold().endswith("blog") \
                or bool(_SITE_CONTEXT.search(text, max(0, m.start() - 40), m.start()))
            if personal or (strict and (m.group(1) or tld in _STRONG_TLDS)):
                spans.append(("URL", m.start(2), m.end(3)))
        found = [Finding(type=t, start=s, end=e, value=text[s:e], layer=LAYER, key=f"{t}:{text[s:e]}")
                 for t, s, e in spans]
        return found + self._again(text, found)

    def _again(self, text: str, found: list[Finding]) -> list[Finding]:
        seen = {(f.start, f.end) for f in found}
        values = list(dict.fromkeys(f.value for f in found if len(f.value) >= 4))[:self._MAX_RECURRING]
        types = {f.value: f.type for f in found}
        extra: list[Finding] = []
        for value in values:
            for start in _recurring(text, value):
                if (start, start + len(value)) not in seen:
                    extra.append(Finding(type=types[value], start=start, end=start + len(value), value=value,
                                         layer=LAYER, key=f"{types[value]}:{value}"))
        return extra
