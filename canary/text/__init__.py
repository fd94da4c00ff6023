"""Text checks of probe answers: language integrity (lingua) and hygiene (pure string rules).

Import the submodules directly: ``canary.text.detect`` loads lingua, the others do not.
"""
