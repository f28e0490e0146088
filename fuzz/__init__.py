"""Coverage-guided fuzz harnesses (atheris); see ``docs/security.md`` and ``fuzz/run.py``."""
