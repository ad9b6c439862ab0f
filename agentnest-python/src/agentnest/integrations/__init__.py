"""Framework integrations, each an optional extra: ``agentnest[smolagents]``,
``agentnest[langchain]``, ``agentnest[openai-agents]``."""
