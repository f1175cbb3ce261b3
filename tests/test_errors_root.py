"""Every exception the product defines derives from ``accounting.errors.EcgwError``, so "an error the gateway raised
on purpose" is one type across gateway, router, privacy and accounting. (``eval`` is a client that reaches the
gateway over HTTP only and imports none of them; its errors are its own.)"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from accounting.errors import EcgwError

PACKAGES = ("gateway", "router", "privacy", "accounting")


def test_every_product_exception_derives_from_the_root() -> None:
    outside = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if info.name.endswith(".__main__"):  # a command: importing it runs it
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__
                        and not issubclass(value, EcgwError)):
                    outside.append(f"{module.__name__}.{name}")
    assert outside == []
