"""Fakes of external services used by the tests (real servers on loopback)."""
