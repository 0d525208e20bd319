"""Publishing response bodies to the input topic: the gateways' producer API (a library:
``toolwire publish`` in :mod:`toolwire.cli.publish` is its command line).

This module is its public face: import from here. Behind it, private modules split along the
lines the tests already draw, each with its own invariant:

- :mod:`._slicing`: cutting a body into message values, never changing a byte;
- :mod:`._coalescing`: joining a stream's slices into fewer messages, same bytes, same order;
- :mod:`._publisher`: :class:`ChunkPublisher`, a body to the topic as the input contract says;
- :mod:`._push`: :class:`PushStream`, a body pushed by a caller that must never wait;
- :mod:`._thread`: :class:`PublisherThread`, a publisher on a loop of its own, for sync callers;
- :mod:`._captures`: captured bodies published through that same path.

What goes on the wire (key, headers, end markers) is not decided here:
:class:`RequestMeta` (from :mod:`toolwire.stream.messages`, the input contract's home, where
the processor reads the same names) builds every header, for this publisher and for
``toolwire dlq replay`` alike.

Kept apart from the stream processor so that a gateway can depend on this small package
without pulling it in (:mod:`toolwire.stream.messages` imports nothing of it).
"""

from toolwire.publish._captures import load_captures, publish_captures, publish_loaded
from toolwire.publish._coalescing import DEFAULT_COALESCE_BYTES, Cancellable, CoalescingClock
from toolwire.publish._publisher import (
    BrokerUnreachable,
    ChunkPublisher,
    PublishError,
    PublishReport,
    TopicNotFound,
)
from toolwire.publish._push import (
    COMPLETED,
    DROPPED,
    ENDED_WITH_ERROR,
    PushStats,
    PushStream,
)
from toolwire.publish._slicing import split_events, split_fixed
from toolwire.publish._thread import PublisherThread
from toolwire.stream.messages import END_CANCELLED, END_EOF, END_ERROR, RequestMeta

__all__ = [
    "COMPLETED",
    "DEFAULT_COALESCE_BYTES",
    "DROPPED",
    "ENDED_WITH_ERROR",
    "END_CANCELLED",
    "END_EOF",
    "END_ERROR",
    "BrokerUnreachable",
    "Cancellable",
    "ChunkPublisher",
    "CoalescingClock",
    "PublishError",
    "PublishReport",
    "PublisherThread",
    "PushStats",
    "PushStream",
    "RequestMeta",
    "TopicNotFound",
    "load_captures",
    "publish_captures",
    "publish_loaded",
    "split_events",
    "split_fixed",
]
