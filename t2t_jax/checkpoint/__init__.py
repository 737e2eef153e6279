"""Checkpoints: orbax manager (latest K + best slot), restore across topologies, averaging."""
