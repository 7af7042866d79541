import sys

from flashssm.cli import main

sys.exit(main())
