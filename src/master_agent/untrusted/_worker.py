"""A worker interpreter's entry point: ``python -m master_agent.untrusted._worker FD MEMORY_BYTES``."""

import sys
from multiprocessing.connection import Connection

from master_agent.untrusted.isolated import serve

if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])), int(sys.argv[2]))
