"""Engines other than the SimPy reference: the lockstep array engine (batch/)."""
