"""The ``canary`` command. Command modules import heavy libraries inside their functions only."""
