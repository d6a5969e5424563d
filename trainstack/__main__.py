import sys

from trainstack.cli.main import main

# Exit like the console script does (`sys.exit(main())`): main returns the exit code of a
# command that ends with click.exceptions.Exit.
sys.exit(main())
