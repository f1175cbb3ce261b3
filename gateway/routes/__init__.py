"""The routes that are neither a surface, the dashboard nor admin — models and health, usage, privacy — and the gatekeeper in front of every route."""
