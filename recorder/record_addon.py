"""The script given to mitmproxy: `mitmdump -s $(shadowreplay record --print-addon-path) ...`.

It builds the addon chain: h2c upgrade (cleartext HTTP/2 for gRPC), the gRPC recorder (which
shares the HTTP recorder's writer), and the HTTP recorder.
"""

from __future__ import annotations

import logging

from shadowreplay.recorder.addon import Recorder

rec = Recorder()
addons: list = []

try:
    from shadowreplay.recorder.h2c import H2CUpgrade
except ImportError as e:  # gRPC support not installed in this checkout
    logging.getLogger("shadowreplay.recorder").info("h2c upgrade not available (%s)", e)
else:
    addons.append(H2CUpgrade())

# GrpcRecorder before Recorder: on shutdown mitmproxy calls `done` in this order, so calls still
# in flight are submitted before the Recorder drains its queue and closes the writer.
try:
    from shadowreplay.recorder.grpc_addon import GrpcRecorder
except ImportError as e:
    logging.getLogger("shadowreplay.recorder").info("gRPC recorder not available (%s)", e)
else:
    addons.append(GrpcRecorder(rec))

addons.append(rec)
