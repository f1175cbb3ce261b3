"""The one way out: the doors (``doors``), the only holder of the upstreams, which hand out the channels; the pools behind them (``pools``); the transports that make the calls (``transports``)."""
