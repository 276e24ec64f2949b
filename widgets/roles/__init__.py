"""Head roles: badges on tiles and the Roles tab."""
