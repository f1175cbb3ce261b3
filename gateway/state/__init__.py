"""Sessions and who owns them: the session stores and which one a configuration gets, their sealing, the secrets key, tenancy and moving old owners to tenants, polling the store."""
