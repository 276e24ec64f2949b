"""The Sweep tab: its panel and plots."""
