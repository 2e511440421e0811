"""Print a TCP port free on the host's loopback right now (for the server to listen on)."""

import socket

with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    print(probe.getsockname()[1])
