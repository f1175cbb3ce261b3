"""The root of the gateway's own errors. Every error that crosses a package boundary (a client's bad request, an
upstream's failure, protection that cannot run, a store that is down, a budget spent, a bad config) derives from
``EcgwError``; the package that raises it defines it. It lives in the lowest layer so every layer can use it."""

from __future__ import annotations


class EcgwError(Exception):
    """An error the gateway raised on purpose, as opposed to a bug."""
