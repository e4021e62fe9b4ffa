"""The components `flwr run` loads: labcore's ServerApp and ClientApp (settings from the run config)."""
from labcore.scale.flower_app import client_app, server_app

__all__ = ["client_app", "server_app"]
