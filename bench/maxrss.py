"""Run a command, then write the peak resident memory of its process tree (MiB) to a file.

Usage: python bench/maxrss.py OUT_FILE COMMAND...
"""

import resource
import subprocess
import sys

out, cmd = sys.argv[1], sys.argv[2:]
code = subprocess.call(cmd)
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux reports KiB
with open(out, "w") as f:
    f.write(f"{peak_kib / 1024:.1f}\n")
sys.exit(code)
