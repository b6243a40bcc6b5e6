"""Stand-ins for tests, benchmarks and dry runs: tiny audio LMs built offline, a chat server."""
