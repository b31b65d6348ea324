from narrative_cli.cli.app import main

main()
