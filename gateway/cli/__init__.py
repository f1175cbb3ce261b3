"""The command line: ``ecgw serve`` (``main``) and the sub-commands each package adds."""
