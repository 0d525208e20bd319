"""Real network faults for tests: network namespaces, a routed hub, a slow-link relay.

:mod:`tests.net.netns` builds the network (one namespace per host, wired to a hub namespace)
and changes it while processes run: blackholes, partitions, dead links. :mod:`tests.net.relay`
is a userspace TCP relay that adds latency and caps bandwidth (the kernel here has no netem).
:mod:`tests.net.probe` is a small agent run inside a namespace that the tests drive over its
stdin/stdout. :mod:`tests.net.cluster` runs a three-node Kafka cluster, one node per namespace.
"""
