from intima.cli import main

main()
