"""Usage normalisation, pricing, edge FLOPs, the durable metering store and usage reports."""

from accounting.calls import MemoryMeter, Meter, NullMeter, UpstreamCall

__all__ = ["MemoryMeter", "Meter", "NullMeter", "UpstreamCall"]
