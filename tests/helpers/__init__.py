"""What several test modules share, defined once: the documentation pages, the reference comparison
with transformers, tiny configs, the fake Hub and the hostile-input corpus."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
