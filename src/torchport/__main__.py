"""`python -m torchport` entry point."""
import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while starting: the same one line and code as during a command
    print("torchport: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
