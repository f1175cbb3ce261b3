"""Transports to model servers: the edge over plain OpenAI HTTP, the cloud through litellm."""
