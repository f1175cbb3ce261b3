"""The transports that make the calls: the edge over plain OpenAI HTTP, the cloud through litellm or the gateway's
own OpenAI-compatible client, behind the provider boundary."""
