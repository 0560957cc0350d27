from migrate.entry import main

main()
