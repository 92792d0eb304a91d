from intima.cli.main import main

main()
