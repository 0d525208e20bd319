"""Publishing response bodies to the input topic: the gateways' producer API (a library:
``toolwire publish`` in :mod:`toolwire.cli.publish` is its command line).

Kept apart from :mod:`toolwire.stream` (the consuming side) so that a gateway can depend on
this small module without pulling in the stream processor.
"""

from toolwire.publish.publisher import (
    DEFAULT_COALESCE_BYTES,
    END_CANCELLED,
    END_EOF,
    END_ERROR,
    BrokerUnreachable,
    ChunkPublisher,
    PublishError,
    PublishReport,
    RequestMeta,
    TopicNotFound,
    load_captures,
    publish_captures,
    publish_loaded,
    split_events,
    split_fixed,
)

__all__ = [
    "DEFAULT_COALESCE_BYTES",
    "END_CANCELLED",
    "END_EOF",
    "END_ERROR",
    "BrokerUnreachable",
    "ChunkPublisher",
    "PublishError",
    "PublishReport",
    "RequestMeta",
    "TopicNotFound",
    "load_captures",
    "publish_captures",
    "publish_loaded",
    "split_events",
    "split_fixed",
]
