"""The window's tabs as controllers: Compare (pins), Sweep, Roles, Frontier, Plan, Long, exports, real models."""
