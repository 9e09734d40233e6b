from judgepanel.cli import main

main()
