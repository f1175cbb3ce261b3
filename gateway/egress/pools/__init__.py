"""The pools behind the two doors: the edge pool (replicas with session affinity and health checks) and the
cloud targets (named models with fallback chains). Both are ``router.upstreams.Pool``s."""
