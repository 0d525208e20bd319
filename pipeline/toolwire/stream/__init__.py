"""The stream processor: Kafka messages of many interleaved responses → records to publish.

:class:`~toolwire.stream.processor.Processor` holds all the logic and works on plain mutable
mappings, so it is tested without Kafka or Faust; :mod:`toolwire.app` only hands it Faust tables
and sends what it returns.
"""
