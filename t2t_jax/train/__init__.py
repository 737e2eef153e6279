"""Training: schedule, loss, state, jitted steps, the loop."""
