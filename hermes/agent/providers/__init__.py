"""Built-in providers. `openai` speaks Chat Completions to any compatible base URL."""
