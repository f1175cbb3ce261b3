"""What every route shares: the one body reader and the chat body's checks, errors in OpenAI's shape and the one mapping of failures to them, server-sent events, fast JSON."""
