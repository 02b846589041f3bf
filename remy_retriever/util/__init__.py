"""Small helpers every layer may use: bounded reprs of values, retries."""
