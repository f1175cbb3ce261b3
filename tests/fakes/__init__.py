"""Doubles for what cannot run here, as real HTTP servers on loopback speaking the real wire format."""
