"""canary: keeps apps off degraded inference providers behind OpenRouter."""

__version__ = "0.1.0"
