"""Django's PostgreSQL backend with a health check that needs no round trip and cursors that
prepare statements with parameters (base.py)."""
