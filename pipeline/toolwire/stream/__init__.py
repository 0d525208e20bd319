"""The stream processor: Kafka messages of many interleaved responses → records to publish.

:class:`~toolwire.stream.processor.Processor` is the one entry point and works on plain mutable
mappings, so it is tested without Kafka or Faust; :mod:`toolwire.app` only hands it Faust tables
and sends what it returns. Behind it: :mod:`~toolwire.stream.messages` (the input contract,
envelope reading included), :mod:`~toolwire.stream.store` (held writes, rebuilds, deletions
after drains) over :mod:`~toolwire.stream.writebehind` and :mod:`~toolwire.stream.state`,
:mod:`~toolwire.stream.control` (control messages and the sweep), and
:mod:`~toolwire.stream.encode` (the output messages).
"""
