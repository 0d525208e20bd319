"""The stream processor: Kafka messages of many interleaved responses → records to publish.

:class:`~toolwire.stream.processor.Processor` is the one entry point and works on plain mutable
mappings, so it is tested without Kafka or Faust; :mod:`toolwire.app` only hands it Faust tables
and sends what it returns. Behind it: :mod:`~toolwire.stream.messages` (the input contract,
envelope reading included), :mod:`~toolwire.stream.store` (held writes, rebuilds, deletions
after drains) over :mod:`~toolwire.stream.writebehind` and :mod:`~toolwire.stream.state`,
:mod:`~toolwire.stream.control` (control messages and the sweep),
:mod:`~toolwire.stream.outbox` (what a decided response becomes until it is published), and
:mod:`~toolwire.stream.encode` (the output messages).
"""

from toolwire.stream.messages import InputMessage, Output, Sink
from toolwire.stream.processor import Processor

__all__ = ["InputMessage", "Output", "Processor", "Sink"]
