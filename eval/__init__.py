"""Drive agent benchmarks (AceBench / EC2-Bench format) through the gateway and report the paper's table.

Modules: ``tasks`` (task-file loader), ``metrics`` (the benchmark's metrics), ``report`` (tables and plots),
``harness`` (the built-in OpenAI tool-calling agent), ``cli`` (``ecgw eval`` sub-commands).
"""
