"""The operator's tools, each the library behind one ``toolwire`` command: the topic
contracts (``topics``), the broker a command talks to (``connect``), dead letters (``dlq``),
reading the output topics (``consume``), the captures (``captures``) and the demo.

The command-line modules (:mod:`toolwire.cli`) only parse arguments and print; the work is
here, so that tests and other programs call it directly. What the worker needs too (the
group's progress behind ``toolwire status``, the admin reads of topics, opening a client) is
in :mod:`toolwire.kafka`, below both.
"""

#: No name at the package level: each module is the library of one command, imported by it.
__all__: list[str] = []
