"""Every detection layer runs in time linear in its input (issue 37): each is fed a repeated pathological shape at n
and at 8n characters and must take at most 20× as long (quadratic is ≈ 64×). CPU time of this process
(``time.process_time``, the least of three runs), so the machine's other load does not count. These ratios are the
only timing assertions the suite holds. A new layer adds its row to ``LAYERS``."""

from __future__ import annotations

import functools
import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from privacy.detect import (
    IdentifierDetector,
    LabelledValueDetector,
    PatternDetector,
    PhoneDetector,
    SecretDetector,
    Target,
    encoded_segments,
    shared_people,
    variants,
)
from privacy.detect.keyhints import KeyHintDetector
from privacy.detect.manifests import SecretManifestDetector
from privacy.detect.profile import rules_of
from privacy.detect.realtext import shared_realtext
from privacy.detect.recurrence import everywhere
from privacy.factory import build_detector, build_egress_check
from privacy.lastcheck import EgressCheck
from privacy.settings import PrivacySettings
from privacy.vault import Vault

_scopes = itertools.count()


def _scope() -> str:
    """A scope no run used: the layers' caches (by scope and text) must not make a repeat free."""
    return f"linear-{next(_scopes)}"


def _people(text: str) -> object:
    return shared_people().find(text, "note", _scope())


def _digits(text: str) -> object:
    return PatternDetector().find(text) + IdentifierDetector().find(text) + PhoneDetector().find(text)


def _detector() -> Callable[[str], object]:
    """Every layer before NER, and a name found once found wherever it recurs (``recurrence.everywhere``)."""
    detector, scope = build_detector(PrivacySettings.model_validate({"layers": {"ner": False}})), _scope()
    return lambda text: detector.detect_shared([Target(text, label="note")], scope=scope, profile="strict")


def _ner() -> Callable[[str], object]:
    detector, scope = build_detector(PrivacySettings.model_validate({"layers": {"people": False}})), _scope()
    return lambda text: detector.detect_shared([Target(text)], scope=scope, profile="strict")


def _last_check() -> Callable[[str], object]:
    """The last check on a body of one message (it remembers what it read: a new one each run)."""
    check, session = build_egress_check(PrivacySettings()), _scope()
    return lambda text: check.read({"model": "m", "messages": [{"role": "user", "content": text}]}, None, Vault(),
                                   session_id=session)


def _last_check_units() -> Callable[[str], object]:
    """The last check with listed units: their backwards, rot13, dotted, spelled-out and base85 forms too."""
    from privacy.detect import UnitMatcher, UnitsDocument, units_of

    units = UnitMatcher(units_of(UnitsDocument.model_validate({"items": [{"entity_id": "e", "sensitive_fields": [
        {"field": "ticket", "value": "ZQX-4471-KAPPA", "dimension": "documents", "weight": 1}]}]})))
    check, session = build_egress_check(PrivacySettings()), _scope()
    return lambda text: check.read({"model": "m", "messages": [{"role": "user", "content": text}]}, units, Vault(),
                                   session_id=session)


def _real_text(text: str) -> object:
    """Issue 38's layers (links, identifiers by context, special categories, anchored mentions) as strict runs them."""
    return shared_realtext().find(text, rules_of("strict"))


def _last_check_vault() -> Callable[[str], object]:
    """The last check's search for vault values alone (the detectors have their own rows), in a body whose every name
    the session's vault already holds (each looked for in it). Its row runs at 32,000 characters: below ~200 M
    characters searched, a search per value (C-fast) is cheaper than one pass, so only at 8n of that size does the
    one pass run — and a search per value at every size (``present``'s quadratic form) fails the row (checked:
    31 ms → 1,353 ms at 8n, ×43; the one pass 34 → 284 ms, ×8.4; load 8)."""
    check, session = EgressCheck([]), _scope()

    def run(text: str) -> object:
        vault = Vault()
        for name in re.findall(r"Mary Jon\w+", text):
            vault.placeholder("PERSON", f"PERSON:{name}", name)
        return check.read({"model": "m", "messages": [{"role": "user", "content": text}]}, None, vault,
                          session_id=session)
    return run


def _units() -> Callable[[str], object]:
    """A session's listed units (a name, a phone, an id; the digits' and spread forms too) on a text of near misses."""
    from privacy.detect import UnitMatcher, UnitsDocument, units_of
    from tests.privacy.helpers import UNITS

    matcher = UnitMatcher(units_of(UnitsDocument.model_validate(UNITS)))
    return matcher.find


def _manifest(i: int) -> str:
    return ("apiVersion: v1\nkind: Secret\ndata:\n" if i == 0 else "") + f"  key_{i}: c2VjcmV0LXZhbHVl{i}==\n"


_NAMES = ["".join(letters) for letters in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=3)]


def _recurrence(text: str) -> object:
    from privacy.detect import Finding

    names = [f"Mary Jon{a}{b}" for a, b in itertools.product("abcdefghij", repeat=2)]
    found = [Finding("PERSON", 0, len(n), n, "people", f"PERSON:{n}") for n in names]
    return everywhere(text, found)


@dataclass(frozen=True)
class Layer:
    name: str
    make: Callable[[], Callable[[str], object]]  # the layer, built anew for each run (untimed): nothing remembered
    shape: Callable[[int], str]  # the i-th piece of the input (most repeat one piece)
    chars: int = 4000  # n: enough for the smaller run to cost milliseconds


def _once(run: Callable[[str], object]) -> Callable[[], Callable[[str], object]]:
    return lambda: run


def _repeat(piece: str) -> Callable[[int], str]:
    return lambda i: piece


LAYERS = [
    Layer("en names after role words", _once(_people), _repeat("assignee: Mary Jones\n")),
    Layer("en names on one line with pay", _once(_people), _repeat("assignee: Mary Jones $1,000.00 ")),
    Layer("role words without names", _once(_people), _repeat("assignee reviewer approver ")),
    Layer("zh names", _once(_people), _repeat("客户：王建国 联系人 李娜 ")),
    Layer("zh names on one line", _once(_people), _repeat("x 王建国 李娜 ")),
    Layer("zh surnames", _once(_people), _repeat("王"), chars=2000),
    Layer("table of people", _once(_people), _repeat("Mary Jones,1990-01-01\n"), chars=8000),
    Layer("postcodes on one line", _once(_people), _repeat("12 High Street, AB1 2CD ")),
    Layer("digits", _once(_digits), _repeat("4111 1111 1111 1111 138 0013 8000 1234567890")),
    Layer("base64-ish runs", lambda: SecretDetector().find, _repeat("QUJDRGVmZ2g0NTY3")),
    Layer("dotted token runs", lambda: SecretDetector().find, _repeat("eyJhbGciOi."), chars=8000),
    Layer("labels", lambda: functools.partial(LabelledValueDetector().find, label=None), _repeat("密码："),
          chars=4000),
    Layer("labels with distinct values", lambda: functools.partial(LabelledValueDetector().find, label=None),
          lambda i: f"passport: K{1000000 + i} "),
    Layer("keys with distinct values", lambda: functools.partial(KeyHintDetector().find, label=None),
          lambda i: ('{"a": 0' if i == 0 else "") + f', "name_{i}": "Mary Jon{i}", "address_{i}": "{i} Rose St"'),
    Layer("HTML", _once(lambda t: list(variants(t))), _repeat("<div class='a'>&#65;&amp;</div>"), chars=8000),
    Layer("escapes", _once(lambda t: list(variants(t)) + list(encoded_segments(t))), _repeat("\\u0041%41\\n\\\\"),
          chars=8000),
    Layer("recurring names", _once(_recurrence), _repeat("Mary Jonab ")),
    Layer("links and paths", _once(_real_text), _repeat(
        "C:\\Users\\a b c /home/x/ github.com/u com.a.b.c. @a www.a- x.github.io ?user=u ")),
    Layer("identifiers by context", _once(_real_text), _repeat(
        "student number is no no # card ending 12 AB-12 ABC123 abc12345 1234567 order # ref ")),
    Layer("special categories", _once(_real_text), _repeat("type 2 early onset i'm as a the Croats diabetes 抑郁症 ")),
    Layer("anchored mentions", _once(_real_text), _repeat(
        "I work at the The A B C my son my friend dr. ask Tomas said (Jo 我在在 和小 I live in ")),
    Layer("real text: one run of letters", _once(_real_text), _repeat("a")),
    Layer("real text: a path's segments", _once(_real_text), _repeat("x/")),
    Layer("real text: dotted segments", _once(_real_text), _repeat("a.")),
    Layer("real text: capitalised words", _once(_real_text), _repeat("Aa ")),
    Layer("detector: zh names", _detector, _repeat("客户：王建国 联系人 李娜 "), chars=2000),
    Layer("detector: en names", _detector, _repeat("assignee: Mary Jones\n")),
    Layer("detector: NER", _ner, lambda i: f"Yesterday Sofia Brandt{chr(97 + i % 26)} met Grace in Berlin. ",
          chars=300),
    Layer("last check: undone forms of listed units", _last_check_units,
          _repeat("APPAK-1744 Z.Q.X.- five three <~87cURD]i~> MDK-4471 "), chars=2000),
    Layer("listed units", _units, _repeat("Maria Gonzale 415-555-013 1101051949123100 Maria.Gonzalez@acme ")),
    Layer("secret manifests", lambda: SecretManifestDetector().find, _manifest),
    Layer("last check", _last_check, lambda i: f"passport: K{1000000 + i} 密码：x{i} ", chars=2000),
    Layer("last check: vault values", _last_check_vault, lambda i: f"assignee: Mary Jon{_NAMES[i]}\n", chars=32_000),
]


def _text(shape: Callable[[int], str], chars: int) -> str:
    pieces: list[str] = []
    size = 0
    for i in itertools.count():
        if size >= chars:
            break
        pieces.append(shape(i))
        size += len(pieces[-1])
    text = "".join(pieces)
    return text + "}" if text.startswith("{") else text


def _cost(layer: Layer, text: str) -> float:
    best = float("inf")
    for _ in range(3):
        run = layer.make()
        start = time.process_time()
        run(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    shared_people().warm(chinese=True)  # jieba and the given names: seconds, once
    shared_realtext().warm()


@pytest.mark.parametrize("layer", LAYERS, ids=[layer.name for layer in LAYERS])
def test_a_layer_costs_linear_time(layer: Layer) -> None:
    layer.make()(_text(layer.shape, 200))  # anything built on first use (a model, a table), built now
    small = _cost(layer, _text(layer.shape, layer.chars))
    large = _cost(layer, _text(layer.shape, 8 * layer.chars))
    assert large <= 20 * max(small, 0.002), f"{layer.name}: {small * 1000:.1f} ms at n, {large * 1000:.1f} ms at 8n"
