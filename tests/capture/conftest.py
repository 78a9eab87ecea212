import sys
from pathlib import Path

# pcapbuild is a plain helper module next to these tests, shared with tests/tcp.
sys.path.insert(0, str(Path(__file__).parent))
