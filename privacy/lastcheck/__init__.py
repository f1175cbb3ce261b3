"""The last check on the outgoing body: what the earlier layers missed, found on the exact body that would leave.

After protection, every key and value of the body (numbers as text, JSON strings inside strings included) is
scanned again with the units, secrets and pattern layers, in each surface form it could be read in (NFKC,
look-alikes read as ASCII, invisible characters removed, HTML entities, %-escapes, ``\\u`` escapes, base64 — MIME
wrapped or nested —, hex and base32 segments that decode to text), across the boundary of adjacent content parts
and adjacent messages, and — for listed values of ≥ 8 non-space characters — across every string of the body in
order (``spread.py``). The values the session's vault already replaced elsewhere are searched too. A hit found
literally is pseudonymised where it stands (every occurrence, numbers included: a number that holds the value,
``-539487261`` or ``539487261.0``, becomes the placeholder's text), but never in the body's structure
(``privacy.structure``: keys, tool and function names, structural fields, a schema's strings): a value known
private wherever it stands (found by this check's detectors, a listed unit, a secret, a class the tier may not
receive) keeps the step home when it stands there, any other vault value is left there as it is (``verdict``). A
hit only an encoding or a split reveals cannot be placed, so the step does not leave (``PrivacyBlocked``).

The package, by idea: how a body is read (``leaves``), one text in all its forms (``forms``), values spread over
many strings (``spread``), the body scanned part by part and remembered (``scan``), values replaced where they
stand (``place``), and what the protector does with the hits (``verdict``: replace, or keep the step off the
cloud). Everything outside imports the names below.
"""

from privacy.lastcheck.forms import LabelledDetector
from privacy.lastcheck.leaves import body_leaves, body_parts, body_seams
from privacy.lastcheck.place import Placed, place
from privacy.lastcheck.scan import EgressCheck, EgressHit
from privacy.lastcheck.spread import spread_found
from privacy.lastcheck.verdict import LastCheck, Settled

__all__ = ["EgressCheck", "EgressHit", "LabelledDetector", "LastCheck", "Placed", "Settled", "body_leaves", "body_parts",
           "body_seams", "place", "spread_found"]
