"""The bundled OpenRouter simulator: `start_simulator` (canary.sim.server), `SimState`
(canary.sim.state), `load_scenario` (canary.sim.scenario). Imported lazily by its users."""
