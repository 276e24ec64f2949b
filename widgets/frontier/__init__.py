"""The Frontier tab: its panel and chart."""
