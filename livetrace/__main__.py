import sys

from livetrace._cli.main import main

sys.exit(main())
