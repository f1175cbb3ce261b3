"""Shadow calls that label edge-answered steps for learning the router."""
