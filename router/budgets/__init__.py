"""Budgets and rate limits per API key, session and experiment arm, kept in the session store (``limits:``)."""
