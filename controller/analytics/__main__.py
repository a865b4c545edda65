"""``python -m controller.analytics run|generate|package ...``"""

import sys

from controller.analytics.cli import main

sys.exit(main())
