"""The Plan tab: its panel and charts."""
