"""Money spent on proposals: a price table per model (a data file, overridable by the user)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kernelevo.settings import get_settings


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens."""

    input: float
    output: float


def parse_price_table(data: dict[str, Any], origin: str = "price table") -> dict[str, Price]:
    """Validate a table of the shape ``{"models": {name: {"input": usd, "output": usd}}}``."""
    models = data.get("models")
    if not isinstance(models, dict):
        raise ValueError(f"{origin}: expected a 'models' object mapping model names to prices")
    table: dict[str, Price] = {}
    for name, entry in models.items():
        try:
            table[name] = Price(float(entry["input"]), float(entry["output"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{origin}: model {name!r} needs numeric 'input' and 'output' (USD per million tokens)"
            ) from exc
    return table


def load_price_table(override: Path | None = None) -> dict[str, Price]:
    """The built-in table, with entries from ``override`` (or KERNELEVO_PRICE_TABLE) replacing them."""
    text = resources.files("kernelevo.search").joinpath("prices.json").read_text(encoding="utf-8")
    table = parse_price_table(json.loads(text), "built-in prices.json")
    path = override or get_settings().price_table
    if path is not None:
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"price table {path}: cannot read it as JSON ({exc})") from exc
        table.update(parse_price_table(data, str(path)))
    return table


def price_for(model: str, table: dict[str, Price]) -> Price | None:
    """The price of ``model``: exact name first, then the longest matching prefix; None when unknown."""
    if not model:
        return None
    if model in table:
        return table[model]
    name = model.rsplit("/", 1)[-1]  # "openai/gpt-4o" as OpenRouter spells it
    matches = [key for key in table if name == key or name.startswith(key + "-")]
    return table[max(matches, key=len)] if matches else None


def cost_usd(model: str, tokens_in: int, tokens_out: int, table: dict[str, Price]) -> float | None:
    """Cost of one request in USD, or None when the model is not in the table."""
    price = price_for(model, table)
    if price is None:
        return None
    return (tokens_in * price.input + tokens_out * price.output) / 1_000_000
