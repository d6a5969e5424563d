from trainstack.cli.main import main

main()
