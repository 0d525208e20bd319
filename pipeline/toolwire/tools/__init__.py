"""The operator's tools, each the library behind one ``toolwire`` command: the topic
contracts (``topics``), the broker a command talks to (``connect``), dead letters (``dlq``),
reading the output topics (``consume``), the group's progress (``status``) and the demo.

The command-line modules (:mod:`toolwire.cli`) only parse arguments and print; the work is
here, so that tests and other programs call it directly.
"""
