"""The search engine: population, proposers, prompts, budgets, durable runs."""
