"""``/admin/v1``: what an admin key may do at run time (reload the configuration, manage virtual keys), every
action audited in the metering database."""
