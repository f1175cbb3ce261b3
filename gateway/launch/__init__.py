"""A local edge model server that ``ecgw serve`` launches, supervises and stops (``edge.launch``)."""
