"""The fleet behind the gateway's two doors: the edge pool (replicas with session affinity and health checks)
and the cloud targets (named models with fallback chains). Both are ``router.fleet.Pool``s."""
