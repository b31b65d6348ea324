from narrative_cli.cli.entry import main

main()
