"""Data classes: every finding type belongs to one (``table``); a class policy says per target tier whether a class
may leave as it is, pseudonymised, or not at all (``policy``), resolved per tenant and key (``resolve``). Only the
names are exported here (the settings import them); the rest is imported from its module."""

from privacy.classes.names import ANYONE, CLASSES, TIERS, ClassAction, DataClass, Tier, Who

__all__ = ["ANYONE", "CLASSES", "TIERS", "ClassAction", "DataClass", "Tier", "Who"]
