"""Studies of configurations: sweeps, the seeds' lessons, the Compare table and the workspace that keeps pins."""
