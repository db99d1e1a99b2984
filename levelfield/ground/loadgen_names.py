"""LoadGen's scenario and mode names, and levelfield's lower-case spelling of them.

    from levelfield.ground.loadgen_names import MODE_NAMES, SCENARIO_NAMES, STREAM_SCENARIOS
    SCENARIO_NAMES["server"]     # "Server", as LoadGen's logs and MLPerf's trees spell it

levelfield writes scenarios and modes in lower case (folder names, settings.json,
the rules); LoadGen's logs and MLCommons trees use the names on the right. The
runner, the checker and the leaderboard all translate through these tables.
"""

from __future__ import annotations

SCENARIO_NAMES = {
    "singlestream": "SingleStream",
    "multistream": "MultiStream",
    "server": "Server",
    "offline": "Offline",
}
MODE_NAMES = {"performance": "PerformanceOnly", "accuracy": "AccuracyOnly"}
# Scenarios that issue the next query only when the last one is answered: their metric is a
# latency percentile (per query for MultiStream), not samples per second.
STREAM_SCENARIOS = ("singlestream", "multistream")
