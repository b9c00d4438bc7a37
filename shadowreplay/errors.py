"""The error hierarchy. Anything a user can cause is a ShadowReplayError: the CLI prints its
message and exits non-zero, never a traceback."""


class ShadowReplayError(Exception):
    """Base of every error caused by input, configuration or environment (not by a bug)."""

    exit_code = 2


class ConfigError(ShadowReplayError):
    """Bad option, missing key, conflicting flags."""


class DatasetError(ShadowReplayError):
    """A dataset could not be read: missing, corrupt, wrong columns, unknown schema version."""


class TargetError(ShadowReplayError):
    """A server (upstream, shadow, metrics endpoint) could not be reached or refused us."""


class EngineNotInstalled(ShadowReplayError):
    """vLLM is not installed where the shadow needs it."""


class GateFailed(ShadowReplayError):
    """A gate (`compare --fail-on`, `analyze --assert`, `capacity --fail-below`) did not pass:
    the command ran and its output names each failing gate. Distinct exit status for CI."""

    exit_code = 3
