import sys

from viewer.cli import main

sys.exit(main())
